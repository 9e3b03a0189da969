"""Run one submission's requests in sandboxes, with a time limit per case and per submission.

The parent sends one request per case and waits for its reply. A case that
times out, kills the worker, or answers with something the protocol refuses
costs that case only: the sandbox is killed whole and a fresh one starts
for the next case (the submission is loaded again). After MAX_TIMEOUTS
timeouts, or when the submission's total time (`max_seconds`) runs out, the
remaining cases are "not run". What the submission prints is drained into
64 KiB buffers that never reach the grader's output.

Time limits are CPU time of the sandbox (issue 19: wall-clock limits let a classmate's CPU hog, whose
spinners each called setsid to escape the scheduler's per-session fairness, time out an honest notebook):
its cgroup's cpuacct usage, else the sum over its processes (`sandbox.cpu_seconds`). Each limit has a
wall-clock cap of WALL_FACTOR x the limit + WALL_SLACK seconds, for a file that sleeps or blocks. Loading
(the module's top level: a notebook's cells, a self-check cell) has its own limit, `load_limit`, half the
submission's time, apart from the per-case one. `Run.cpu_seconds` is what the run used; `Run.sandbox_limits`
says which bounds applied (a cgroup per sandbox, or rlimits only).

The cases go in a secret random order (a fresh `random.SystemRandom`, not
the seed), each under a random request id: a file can count its calls or
read the request it is answering (it shares the worker's process), and
neither tells it which case that is, so only its inputs can tell a case
where an error is right from one where it is wrong (a file that raised only
at the bad-input cases' places in the case list took their points, see
tests/submissions/ex02/hostile_case_by_place.py).

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
WALL_FACTOR, WALL_SLACK = 3.0, 2.0
POLL = 0.05  # seconds between two looks at the sandbox's CPU time while waiting for a reply


def wall_cap(seconds):
    """The wall-clock cap on a CPU-time limit of `seconds` (a file that sleeps uses no CPU).

    >>> wall_cap(10.0)
    32.0
    """
    return WALL_FACTOR * seconds + WALL_SLACK


def load_limit(timeout, max_seconds):
    """The CPU time a sandbox may take to load the submission: a notebook's top level runs there, once per sandbox.

    >>> load_limit(10.0, 60.0), load_limit(1.0, 5.0)
    (30.0, 3.0)
    """
    return max(LOAD_TIMEOUT, timeout, max_seconds / 2)


@dataclass
class Run:
    outcomes: list
    load_error: dict = None        # the worker's description of why the submission cannot load
    numpy_seen: bool = False       # process mode only: NumPy's core was mapped into a worker
    numpy_wanted: bool = False     # the worker saw the submission ask for NumPy (see worker._StandIns)
    seconds: float = 0.0           # wall-clock time of the run
    cpu_seconds: float = 0.0       # CPU time its sandboxes used (what the time limits count)
    sandbox_limits: str = ""       # which bounds applied: a cgroup per sandbox, or rlimits only (sandbox.limits_note)
    output: bytearray = field(default_factory=bytearray)
    values_left: list = field(default_factory=lambda: [protocol.MAX_RUN_ITEMS])   # what its replies may still hold


@dataclass
class _Budget:
    """The submission's time: CPU seconds left (`left`), and the wall-clock instant that caps it (`wall_end`)."""
    max_seconds: float
    spent: float
    wall_end: float

    def left(self, result, box_cpu=0.0):
        return self.max_seconds - self.spent - result.cpu_seconds - box_cpu

    def exhausted(self, result, box_cpu=0.0):
        return self.left(result, box_cpu) <= 0 or time.monotonic() >= self.wall_end


def _drain(stream, buffer):
    for chunk in iter(lambda: stream.read(65536), b""):
        buffer += chunk[:max(0, KEEP_OUTPUT - len(buffer))]
    stream.close()


def _read_frames(fd, inbox):
    """Frames from the reply pipe into `inbox`; a ProtocolError, then None, ends it."""
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
            body = stream.read(size)
            try:
                inbox.put(protocol.parse(body))
            except protocol.ProtocolError as exc:
                inbox.put(exc)
                break
    finally:
        stream.close()
        inbox.put(None)


class Sandboxed:
    """One running worker: its pipes, its reader threads, and how to kill it."""

    def __init__(self, mode, submission, numpy, output):
        read_fd, write_fd = os.pipe()
        self.proc = sandbox.spawn(mode, submission, numpy, write_fd)
        os.close(write_fd)  # only the worker holds the write end: EOF means it is gone
        # Subtle: at most one parsed reply waits here. Unbounded, a worker that floods its channel while the
        # parent judges would pile up parsed replies (the red team's took 4.8 GB); bounded, the reader stops
        # reading, the pipe fills and the worker blocks on its write.
        self.mode, self.inbox = mode, queue.Queue(maxsize=1)
        self.threads = [threading.Thread(target=_read_frames, args=(read_fd, self.inbox), daemon=True),
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

    def receive(self, cpu_limit, wall_until):
        """The next reply; None when the worker is gone; "timeout" once the sandbox has used `cpu_limit` more
        CPU seconds, or at `wall_until` (a time.monotonic() value); or a ProtocolError."""
        start = self.cpu()
        while True:
            step = min(POLL, wall_until - time.monotonic())
            if step <= 0:
                return "timeout"
            try:
                return self.inbox.get(timeout=step)
            except queue.Empty:
                pass
            if self.cpu() - start >= cpu_limit:
                return "timeout"

    def kill(self, run):
        if self.mode in ("process", "user") and sandbox.numpy_mapped(self.proc):
            run.numpy_seen = True
        run.cpu_seconds += self.cpu()
        code = sandbox.kill(self.proc)
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
        replays=(), spent=0.0):
    """Send `requests` (one per case) to the submission at `path`; never raises for a bad submission.

    The submission's time: `max_seconds` of its sandboxes' CPU time, less `spent` (what its earlier runs used:
    an earlier Run's `cpu_seconds`), within a wall-clock cap of wall_cap(max_seconds) from `since` (a
    time.monotonic() value; default: now), so that the runs of one submission, and the reading of its
    notebook, share it. `replays[i]`: case i is statistical; it is replayed in one more, fresh sandbox (see
    `replay.py`).
    """
    started = time.monotonic()
    budget = _Budget(max_seconds, spent, (started if since is None else since) + wall_cap(max_seconds))
    result = Run(outcomes=[None] * len(requests), sandbox_limits=sandbox.limits_note())
    config = sandbox.worker_config(mode, path, display, functions, numpy, max_seconds)
    spawn = (mode, path, numpy)
    limits = (timeout, load_limit(timeout, max_seconds), max_seconds)
    load_error = _in_secret_order(spawn, config, requests, result.outcomes, result, limits, budget)
    if isinstance(load_error, dict) or load_error is None:
        result.load_error = load_error
    else:
        for j, outcome in enumerate(result.outcomes):
            if outcome is None:
                result.outcomes[j] = {"failure": f"not run: when the submission was loaded again, {load_error}"}
    if result.load_error is None and any(replays):
        _replay(spawn, config, requests, result, replays, limits, budget)
    result.seconds = time.monotonic() - started
    return result


def _replay(spawn, config, requests, result, replays, limits, budget):
    """Replay the statistical cases in a fresh sandbox, among the other cases as they were first sent (decoys),
    all in a new secret order under new ids; note in each statistical case's outcome how it went."""
    planned = replay.plan(requests, result.outcomes, replays)
    if not any(picks for _, picks in planned):
        return
    if budget.left(result) < 1.0 or budget.exhausted(result):
        replay.fail(result.outcomes, planned, f"the submission's total time ({limits[2]:g} s) ran out")
        return
    replies = [None] * len(planned)
    load_error = _in_secret_order(spawn, config, [r for r, _ in planned], replies, result, limits, budget)
    if isinstance(load_error, dict):
        text = load_error["message"] if load_error.get("type") in ("load", "missing") else \
            f"{load_error.get('type')}: {load_error.get('message')}"
        replay.fail(result.outcomes, planned, f"it did not load there ({text})")
    elif load_error is not None:
        replay.fail(result.outcomes, planned, load_error)
    else:
        replay.attach(result.outcomes, planned, replies)


def _in_secret_order(spawn, config, requests, outcomes, result, limits, budget, rand=None):
    """`_exchange` with the requests shuffled and renamed (random ids); `outcomes` filled in the caller's order.

    Subtle: the order and the ids come from the operating system's randomness, never from the seed: a
    seed can be guessed (a small --seed, or 0), and the shipped case list is readable. The replay's requests
    go through here too: a replayed case's request is drawn as its first run's was (see replay.plan).
    """
    rand = rand or random.SystemRandom()
    order = list(range(len(requests)))
    rand.shuffle(order)
    ids = rand.sample(range(1, 2 ** 53), len(requests))
    sent = [dict(requests[i], id=ids[k]) for k, i in enumerate(order)]
    got = [None] * len(sent)
    load_error = _exchange(spawn, config, sent, got, result, limits, budget)
    for k, i in enumerate(order):
        outcomes[i] = got[k]
    return load_error


def _exchange(spawn, config, requests, outcomes, result, limits, budget):
    """Run `requests` in sandboxes (a fresh one after each lost case), filling `outcomes`.

    `spawn`: (mode, path, numpy) for `Sandboxed`; `limits`: (seconds per case, seconds to load, the
    submission's seconds), CPU time. Returns None; the worker's load error (a dict) if the submission never
    loaded; or a sentence if it loaded once and not again (the cases left are then None).
    """
    timeout, loading, max_seconds = limits
    timeouts, i = 0, 0
    while i < len(requests):
        box = Sandboxed(*spawn, result.output)
        box.send(sandbox.fresh_identity(config))  # a uid of its own: see worker.REFUSED (keyring)
        limit = max(0.0, min(loading, budget.left(result)))
        first = box.receive(limit, min(time.monotonic() + wall_cap(limit), budget.wall_end))
        result.numpy_wanted |= isinstance(first, dict) and first.get("numpy_wanted") is True
        if not (isinstance(first, dict) and first.get("event") == "loaded"):
            code = None
            if first is None:  # the worker is gone: let its exit code arrive before the kill
                try:
                    code = box.proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
            killed = box.kill(result)
            code = killed if code is None else code
            reason = _load_failure(first, code)
            if i == 0:
                return reason if isinstance(reason, dict) else {"type": "load", "message": reason}
            return reason["message"] if isinstance(reason, dict) else reason
        while i < len(requests):
            left = budget.left(result, box.cpu())
            if left <= 0 or time.monotonic() >= budget.wall_end:
                break
            box.send(requests[i])
            limit = min(timeout, left)
            reply = box.receive(limit, min(time.monotonic() + wall_cap(limit), budget.wall_end))
            i += 1
            if reply == "timeout":
                timeouts += 1
                ran_out = timeout > left or time.monotonic() >= budget.wall_end
                outcomes[i - 1] = {"failure": f"the submission's total time ({max_seconds:g} s) ran out"
                                   if ran_out else f"timed out after {timeout:g} s"}
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
        if budget.exhausted(result) or timeouts >= MAX_TIMEOUTS:
            why = (f"{MAX_TIMEOUTS} cases already timed out" if timeouts >= MAX_TIMEOUTS
                   else f"the submission's total time ({max_seconds:g} s) ran out")
            for j in range(i, len(requests)):
                outcomes[j] = {"failure": f"not run: {why}"}
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
    if first is None:
        return f"the worker exited (code {code}) while loading (os._exit at import?)"
    return "it wrote something that is not a reply to the grader's channel while loading"
