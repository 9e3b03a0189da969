"""Run one submission's requests in sandboxes, with a time limit per case and per submission.

The parent sends one request per case and waits for its reply. A case that
times out, kills the worker, or answers with something the protocol refuses
costs that case only: the sandbox is killed whole and a fresh one starts
for the next case (the submission is loaded again). After MAX_TIMEOUTS
timeouts, when the submission's total time (`max_seconds`) runs out, or when its
replies together pass MAX_RUN_BYTES (or protocol.MAX_RUN_ITEMS values), the
remaining cases are "not run": a hostile file costs no more than an honest slow one.
What the submission prints is drained into 64 KiB buffers that never reach the
grader's output.

Time limits count what the submission did, never what the machine did (issues 19 and 25: a classmate's
CPU hog, or a busy machine, must not cost an honest file its points). A case may use `timeout` seconds of
the sandbox's CPU time (its cgroup's cpuacct usage, else the sum over its processes: `sandbox.cpu_seconds`),
and may wait BLOCKED seconds with no thread running or waiting for a CPU (`sandbox.running`: it sleeps, or
waits on a pipe): that waiting is its own, whatever the load. Time spent waiting for a CPU that another
program holds counts for neither. Only when a limit of L seconds is still not used up after
host_cap(L) seconds of wall time does the grader give up, and then the case says it was the machine's doing
(`Run.host`): the caller regrades the file rather than blame it. Loading (the module's top level: a
notebook's cells, a self-check cell) has its own limits, `load_limit` of CPU and BLOCKED_LOAD of waiting.
`Run.cpu_seconds` is what the run used; `Run.stopped` counts the cases a limit of the submission's time
stopped (the caller regrades such a file once, alone, before it believes them); `Run.sandbox_limits` says
which bounds applied (a cgroup per sandbox, or rlimits only).

The cases go in an order and under request ids drawn from the grading's key (`order_rng`: the exercise and
the instructor's secret), not in case-list order: a file can count its calls or read the request it is
answering (it shares the worker's process), and neither tells it which case that is, so only its inputs
can tell a case where an error is right from one where it is wrong (a file that raised only at the
bad-input cases' places in the case list took their points, see tests/submissions/ex02/hostile_case_by_place.py).
The order is the same on every run under one key, so a time-out stops the same cases every time.

In a batch, every sandbox holds a lock while it lives (`_Lock`): two submissions' sandboxes never run at
the same time, so what could pass between sandboxes that coexist (CPU contention, futexes on shared pages,
the timing of name lookups) has nobody to pass to.

After the cases, some calls of the statistical cases are replayed in one
more sandbox, fresh, and must give the same outputs (`replay.py`); how that
went is each such case's `outcomes[i]["replay"]`, for its judge.

`run()` returns a `Run`: `outcomes[i]` is {"results": [...]} (the validated
reply, see `protocol.check_reply`) or {"failure": "a sentence"} for case i.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "s.py"), "w") as f:
    ...     _ = f.write("def double(x): return 2 * x")
    >>> run(os.path.join(folder, "s.py"), "s.py", ["double"],
    ...     [{"id": 0, "func": "double", "calls": [{"args": [21]}]}], "process").outcomes
    [{'results': [{'value': 42}]}]
"""

import fcntl
import os
import queue
import random
import subprocess
import threading
import time
from dataclasses import dataclass, field

from . import protocol, replay, sandbox, worker

MAX_TIMEOUTS = 3
KEEP_OUTPUT = 64 * 1024
LOAD_TIMEOUT = 3.0  # at least; more when the per-case limit or the submission's time is longer
POLL = 0.05  # seconds between two looks at the sandbox while waiting for a reply
# Waiting that is the submission's own (no thread running or waiting for a CPU: sleep, a pipe that never
# fills): a case may wait BLOCKED seconds (at most its CPU limit), loading BLOCKED_LOAD, the whole submission
# BLOCKED_TOTAL.
BLOCKED, BLOCKED_LOAD, BLOCKED_TOTAL = 5.0, 15.0, 30.0
# The host's backstop: a limit of L CPU seconds that has not been used up after HOST_FACTOR x L + HOST_SLACK
# seconds of wall time means the machine did not run the sandbox: the host's doing, never the learner's.
HOST_FACTOR, HOST_SLACK = 30.0, 60.0
# All the replies of one run, in bytes (the largest honest run sends about 3 MiB; one reply may hold 8 MiB).
MAX_RUN_BYTES = 24 * 1024 ** 2


def host_cap(seconds):
    """The wall-clock backstop on a CPU-time limit of `seconds` (see HOST_FACTOR).

    >>> host_cap(10.0)
    360.0
    """
    return HOST_FACTOR * seconds + HOST_SLACK


def load_limit(timeout, max_seconds):
    """The CPU time a sandbox may take to load the submission: a notebook's top level runs there, once per sandbox.

    >>> load_limit(10.0, 60.0), load_limit(1.0, 5.0)
    (30.0, 3.0)
    """
    return max(LOAD_TIMEOUT, timeout, max_seconds / 2)


def order_rng(key, purpose):
    """The generator of one exchange's order and request ids: a function of the grading's key and a purpose.

    The key is drawn from the exercise and the instructor's secret (`cases.grading_key`), so the same file
    under the same seed is sent its cases in the same order, and which cases a time-out leaves unrun is a fact
    about the file, not a draw (issue 25: one looping file scored 0, 5, 0 and 9 in four runs).

    >>> order_rng("k", "cases").random() == order_rng("k", "cases").random() != order_rng("k", "replay").random()
    True
    """
    return random.Random(f"{key}\x00{purpose}")


@dataclass
class Run:
    outcomes: list
    load_error: dict = None        # the worker's description of why the submission cannot load
    numpy_seen: bool = False       # process mode only: NumPy's core was mapped into a worker
    numpy_wanted: bool = False     # the worker saw the submission ask for NumPy (see worker._StandIns)
    seconds: float = 0.0           # wall-clock time of the run
    cpu_seconds: float = 0.0       # CPU time its sandboxes used (what the time limits count)
    blocked_seconds: float = 0.0   # time its sandboxes waited on nothing but themselves (BLOCKED)
    stopped: int = 0               # cases stopped by a limit of the submission's time (CPU, blocked, total)
    host: bool = False             # a wait reached the host's backstop: the machine, not the file (HOST_FACTOR)
    notes: dict = field(default_factory=dict)   # the worker's notes on loading (a notebook's first failing cell)
    sandbox_limits: str = ""       # which bounds applied: a cgroup per sandbox, or rlimits only (sandbox.limits_note)
    output: bytearray = field(default_factory=bytearray)
    values_left: list = field(default_factory=lambda: [protocol.MAX_RUN_ITEMS])   # what its replies may still hold
    bytes_left: list = field(default_factory=lambda: [MAX_RUN_BYTES])            # and how many bytes


@dataclass
class _Budget:
    """The submission's time: CPU seconds left (`left`), its own waiting left (`blocked_left`), and the wall-clock
    instant of the host's backstop (`host_end`)."""
    max_seconds: float
    spent: float
    host_end: float
    blocked_left: float = BLOCKED_TOTAL

    def left(self, result, box_cpu=0.0):
        return self.max_seconds - self.spent - result.cpu_seconds - box_cpu

    def exhausted(self, result, box_cpu=0.0):
        return self.left(result, box_cpu) <= 0 or self.blocked_left <= 0 or time.monotonic() >= self.host_end


def _drain(stream, buffer):
    for chunk in iter(lambda: stream.read(65536), b""):
        buffer += chunk[:max(0, KEEP_OUTPUT - len(buffer))]
    stream.close()


def _read_frames(fd, inbox, bytes_left):
    """Frames from the reply pipe into `inbox`; a ProtocolError, then None, ends it. `bytes_left`: a one-element
    list, the bytes the run's replies may still take (MAX_RUN_BYTES in all), counted before a body is read."""
    stream = os.fdopen(fd, "rb")
    try:
        while True:
            header = stream.readline(24)
            if not header:
                break
            if not header.endswith(b"\n") or not header[:-1].isdigit():
                inbox.put(protocol.ProtocolError("bytes on the reply channel that are not a reply"))
                break
            size = int(header)
            if size > protocol.MAX_REPLY:
                inbox.put(protocol.ProtocolError(f"a reply of {size} bytes (limit {protocol.MAX_REPLY})"))
                break
            bytes_left[0] -= size
            if bytes_left[0] < 0:
                inbox.put(protocol.ProtocolError(f"replies of more than {MAX_RUN_BYTES // 1024 ** 2} MiB in all"))
                break
            body = stream.read(size)
            try:
                inbox.put(protocol.parse(body))
            except protocol.ProtocolError as exc:
                inbox.put(exc)
                break
    finally:
        stream.close()
        inbox.put(None)


class _Lock:
    """An exclusive lock on a file, held while one sandbox lives: in a batch, no two submissions' sandboxes run
    at the same time, so no channel between sandboxes that coexist (CPU contention, futexes on shared pages,
    the timing of name lookups) can carry anything from one to another. None: no lock (one file alone)."""

    def __init__(self, path):
        self.fd, self.waited = None, 0.0
        if path:
            started = time.monotonic()
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            self.waited = time.monotonic() - started

    def release(self):
        if self.fd is not None:
            os.close(self.fd)   # closing the last descriptor releases the lock
            self.fd = None


class Sandboxed:
    """One running worker: its pipes, its reader threads, and how to kill it (`lock`: a _Lock it holds)."""

    def __init__(self, mode, submission, numpy, output, bytes_left, lock=None):
        self.lock = _Lock(lock)
        read_fd, write_fd = os.pipe()
        try:
            self.proc = sandbox.spawn(mode, submission, numpy, write_fd)
        except BaseException:   # no sandbox: let go of the lock and the pipe now, not when this process exits
            os.close(read_fd)
            self.lock.release()
            raise
        finally:
            os.close(write_fd)  # only the worker holds the write end: EOF means it is gone
        # Subtle: at most one parsed reply waits here. Unbounded, a worker that floods its channel while the
        # parent judges would pile up parsed replies (the red team's took 4.8 GB); bounded, the reader stops
        # reading, the pipe fills and the worker blocks on its write.
        self.mode, self.inbox = mode, queue.Queue(maxsize=1)
        self.threads = [threading.Thread(target=_read_frames, args=(read_fd, self.inbox, bytes_left), daemon=True),
                        threading.Thread(target=_drain, args=(self.proc.stdout, output), daemon=True),
                        threading.Thread(target=_drain, args=(self.proc.stderr, bytearray()), daemon=True)]
        for t in self.threads:
            t.start()

    def send(self, message):
        """Write one frame without blocking the parent (a worker that never reads cannot stall it)."""
        def write():
            try:
                self.proc.stdin.write(worker.frame(message))
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass
        threading.Thread(target=write, daemon=True).start()

    def cpu(self):
        return sandbox.cpu_seconds(self.proc)

    def receive(self, cpu_limit, blocked_limit, budget):
        """The next reply; None when the worker is gone; or, with the time it waited on nothing but itself:
        "timeout" once the sandbox has used `cpu_limit` more CPU seconds, "blocked" once it has waited
        `blocked_limit` seconds with no thread running or waiting for a CPU (`sandbox.running`), "host" at the
        host's backstop (`host_cap`, or the submission's); or a ProtocolError. Its own waiting is taken from
        `budget.blocked_left`."""
        start, began = self.cpu(), time.monotonic()
        until, last, blocked = min(began + host_cap(cpu_limit), budget.host_end), began, 0.0
        try:
            while True:
                step = min(POLL, until - time.monotonic())
                if step <= 0:
                    return "host"
                try:
                    return self.inbox.get(timeout=step)
                except queue.Empty:
                    pass
                now = time.monotonic()
                if sandbox.running(self.proc) is False:
                    blocked += now - last
                last = now
                if self.cpu() - start >= cpu_limit:
                    return "timeout"
                if blocked >= blocked_limit:
                    return "blocked"
        finally:
            budget.blocked_left -= blocked

    def kill(self, run):
        if self.mode in ("process", "user") and sandbox.numpy_mapped(self.proc):
            run.numpy_seen = True
        run.cpu_seconds += self.cpu()
        code = sandbox.kill(self.proc)
        self.lock.release()
        deadline = time.monotonic() + 2
        for t in self.threads:
            while t.is_alive() and time.monotonic() < deadline:
                try:  # a reader blocked on a full inbox: let it reach the end of the channel
                    while True:
                        self.inbox.get_nowait()
                except queue.Empty:
                    pass
                t.join(timeout=0.05)
        return code


def run(path, display, functions, requests, mode, numpy=False, timeout=10.0, max_seconds=60.0, since=None,
        replays=(), spent=0.0, key="", lock=None, cells=None):
    """Send `requests` (one per case) to the submission at `path`; never raises for a bad submission.

    The submission's time: `max_seconds` of its sandboxes' CPU time, less `spent` (what its earlier runs used:
    an earlier Run's `cpu_seconds`), and BLOCKED_TOTAL seconds of its own waiting, within the host's backstop
    host_cap(max_seconds) from `since` (a time.monotonic() value; default: now), so that the runs of one
    submission, and the reading of its notebook, share it. `replays[i]`: case i is statistical; it is replayed
    in one more, fresh sandbox (see `replay.py`). `key`: what the order of the requests is drawn from
    (`order_rng`). `lock`: a file every sandbox locks while it lives (a batch's, see `_Lock`). `cells`: a
    notebook's cells as (cell number, first line, last line) of the script, run one by one as Jupyter runs them
    (worker.load).
    """
    started = time.monotonic()
    budget = _Budget(max_seconds, spent, (started if since is None else since) + host_cap(max_seconds))
    result = Run(outcomes=[None] * len(requests), sandbox_limits=sandbox.limits_note())
    config = sandbox.worker_config(mode, path, display, functions, numpy, max_seconds)
    config["cells"] = cells
    spawn = (mode, path, numpy, result.output, result.bytes_left, lock)
    limits = (timeout, load_limit(timeout, max_seconds), max_seconds)
    load_error = _in_order(spawn, config, requests, result.outcomes, result, limits, budget,
                           order_rng(key, "cases" + ("/numpy" if numpy else "")))
    if isinstance(load_error, dict) or load_error is None:
        result.load_error = load_error
    else:
        for j, outcome in enumerate(result.outcomes):
            if outcome is None:
                result.outcomes[j] = {"failure": f"not run: when the submission was loaded again, {load_error}"}
    if result.load_error is None and any(replays):
        _replay(spawn, config, requests, result, replays, limits, budget, key + ("/numpy" if numpy else ""))
    result.seconds = time.monotonic() - started
    result.blocked_seconds = BLOCKED_TOTAL - budget.blocked_left
    return result


def _replay(spawn, config, requests, result, replays, limits, budget, key):
    """Replay the statistical cases in a fresh sandbox, among the other cases as they were first sent (decoys),
    all in a new order under new ids; note in each statistical case's outcome how it went."""
    planned = replay.plan(requests, result.outcomes, replays, rand=order_rng(key, "replay picks"))
    if not any(picks for _, picks in planned):
        return
    if budget.left(result) < 1.0 or budget.exhausted(result):
        replay.fail(result.outcomes, planned, f"the submission's total time ({limits[2]:g} s) ran out")
        return
    replies = [None] * len(planned)
    load_error = _in_order(spawn, config, [r for r, _ in planned], replies, result, limits, budget,
                           order_rng(key, "replay order"))
    if isinstance(load_error, dict):
        text = load_error["message"] if load_error.get("type") in ("load", "missing") else \
            f"{load_error.get('type')}: {load_error.get('message')}"
        replay.fail(result.outcomes, planned, f"it did not load there ({text})")
    elif load_error is not None:
        replay.fail(result.outcomes, planned, load_error)
    else:
        replay.attach(result.outcomes, planned, replies)


def _in_order(spawn, config, requests, outcomes, result, limits, budget, rand):
    """`_exchange` with the requests shuffled and renamed by `rand` (`order_rng`); `outcomes` filled in the
    caller's order.

    Subtle: a file shares the worker's process, so it can count its calls and read each request's id; with the
    order and the ids drawn from the grading's key, neither tells it which case it is answering unless it knows
    the instructor's secret (with the shipped cases, seed 0, the order is as public as the cases). The replay's
    requests go through here too: a replayed case's request is drawn as its first run's was (see replay.plan).
    """
    order = list(range(len(requests)))
    rand.shuffle(order)
    ids = rand.sample(range(1, 2 ** 53), len(requests))
    sent = [dict(requests[i], id=ids[k]) for k, i in enumerate(order)]
    got = [None] * len(sent)
    load_error = _exchange(spawn, config, sent, got, result, limits, budget)
    for k, i in enumerate(order):
        outcomes[i] = got[k]
    return load_error


HOST = "not run: the machine was too busy to run this case (the host's doing, not your code's): regrade it"


def _stop_message(why, timeout, max_seconds, ran_out):
    """The failure of a case a limit stopped (see `receive`)."""
    if ran_out:
        return f"the submission's total time ({max_seconds:g} s of CPU, {BLOCKED_TOTAL:g} s waiting) ran out"
    if why == "blocked":
        return (f"stopped after waiting {min(BLOCKED, timeout):g} s without running (sleeping, or waiting for "
                "input that never comes): the function does not return")
    return f"timed out after {timeout:g} s"


def _exchange(spawn, config, requests, outcomes, result, limits, budget):
    """Run `requests` in sandboxes (a fresh one after each lost case), filling `outcomes`.

    `spawn`: the arguments of `Sandboxed`; `limits`: (seconds per case, seconds to load, the submission's
    seconds), CPU time. Returns None; the worker's load error (a dict) if the submission never loaded; or a
    sentence if it loaded once and not again (the cases left are then None).
    """
    timeout, loading, max_seconds = limits
    timeouts, i = 0, 0
    while i < len(requests):
        box = Sandboxed(*spawn)
        budget.host_end += box.lock.waited   # waiting for another file's sandbox is nobody's time
        box.send(sandbox.fresh_identity(config))  # a uid of its own: see worker.REFUSED (keyring)
        limit = max(0.0, min(loading, budget.left(result)))
        first = box.receive(limit, min(BLOCKED_LOAD, loading, max(0.0, budget.blocked_left)), budget)
        result.numpy_wanted |= isinstance(first, dict) and first.get("numpy_wanted") is True
        if isinstance(first, dict) and first.get("notes") and not result.notes:   # as the first load found them
            result.notes = protocol.clean_notes(first["notes"])
        if not (isinstance(first, dict) and first.get("event") == "loaded"):
            code = None
            if first is None:  # the worker is gone: let its exit code arrive before the kill
                try:
                    code = box.proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
            killed = box.kill(result)
            code = killed if code is None else code
            result.host |= first == "host"
            result.stopped += first in ("timeout", "blocked")
            reason = _load_failure(first, code)
            if i == 0:
                return reason if isinstance(reason, dict) else {"type": "load", "message": reason}
            return reason["message"] if isinstance(reason, dict) else reason
        while i < len(requests):
            if budget.exhausted(result, box.cpu()):
                break
            box.send(requests[i])
            left = budget.left(result, box.cpu())
            limit = min(timeout, left)
            reply = box.receive(limit, min(BLOCKED, timeout, max(0.0, budget.blocked_left)), budget)
            i += 1
            if reply == "host":
                result.host = True
                outcomes[i - 1] = {"failure": HOST}
                break
            if reply in ("timeout", "blocked"):
                timeouts += 1
                result.stopped += 1
                ran_out = (reply == "timeout" and timeout > left) or budget.blocked_left <= 0
                outcomes[i - 1] = {"failure": _stop_message(reply, timeout, max_seconds, ran_out)}
                break
            if reply is None:
                try:
                    code = box.proc.wait(timeout=1)
                except subprocess.TimeoutExpired:  # it closed the channel but lives on
                    code = "unknown"
                outcomes[i - 1] = {"failure": f"the worker exited (code {code}) during this case: "
                                              "os._exit, a signal or a crash"}
                break
            result.numpy_wanted |= isinstance(reply, dict) and reply.get("numpy_wanted") is True
            try:
                if isinstance(reply, protocol.ProtocolError):
                    raise reply
                outcomes[i - 1] = protocol.check_reply(reply, requests[i - 1], result.values_left)
            except protocol.ProtocolError as exc:
                outcomes[i - 1] = {"failure": f"the sandbox sent {exc}"}
                break
        box.kill(result)
        over = result.bytes_left[0] < 0 or result.values_left[0] < 0
        if over or budget.exhausted(result) or timeouts >= MAX_TIMEOUTS:
            if time.monotonic() >= budget.host_end:
                why, result.host = HOST[len("not run: "):], True
            elif over:
                why = "its replies went over what a run may send back (the grader's memory is bounded)"
            elif timeouts >= MAX_TIMEOUTS:
                why = f"{MAX_TIMEOUTS} cases already timed out"
            else:
                why = f"the submission's total time ({max_seconds:g} s of CPU, {BLOCKED_TOTAL:g} s waiting) ran out"
            for j in range(i, len(requests)):
                outcomes[j] = {"failure": f"not run: {why}"}
            if i < len(requests) and not over and not result.host:
                result.stopped += 1
            break
    return None


def _load_failure(first, code):
    """The worker's load_error (a dict), or a sentence for a worker that never said 'loaded'."""
    if isinstance(first, dict) and first.get("event") == "load_error" and type(first.get("error")) is dict:
        try:
            return protocol.clean_exception(first["error"])
        except protocol.ProtocolError as exc:
            return f"it could not load, and sent {exc}"
    if first == "timeout":
        return "it did not finish loading in time (an endless loop at import?)"
    if first == "blocked":
        return "it waited without running while loading (sleeping, or waiting for input that never comes)"
    if first == "host":
        return "the machine was too busy to load it (the host's doing, not your code's): regrade it"
    if first is None:
        return f"the worker exited (code {code}) while loading (os._exit at import?)"
    return "it wrote something that is not a reply to the grader's channel while loading"
