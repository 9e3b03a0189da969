"""Run a submission's cases in a child process, with a time limit per case.

One child runs the cases in order and reports each as it finishes (see
`child.py`). If it stops answering within `timeout` seconds, or dies, the
parent kills its process group, marks that one case, and starts a fresh
child for the rest: one infinite loop or os._exit costs one case, not all.
After MAX_TIMEOUTS timed-out cases the remaining ones are marked "not run",
so a submission that hangs on every call still finishes in bounded time.
The child's stdout and stderr are drained by threads into 64 KiB buffers,
so megabytes of prints neither block it nor reach the grader's output.

Returns a `Run`: `messages[i]` is the child's plain-data message for case i,
or a synthetic {"outcome": "timeout" | "died" | "not_run" | ...}.
"""

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
KEEP_OUTPUT = 64 * 1024
MAX_TIMEOUTS = 3
MAX_LINE = 32 * 1024 ** 2


@dataclass
class Run:
    messages: list
    load_error: str = ""           # non-empty: the submission cannot be graded
    numpy: bool = False            # NumPy imported at any point, in any child
    stdout: bytearray = field(default_factory=bytearray)
    seconds: float = 0.0


def _drain(stream, buffer):
    """Read a pipe to its end, keeping only the first KEEP_OUTPUT bytes."""
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        if len(buffer) < KEEP_OUTPUT:
            buffer += chunk[:KEEP_OUTPUT - len(buffer)]
    stream.close()


def _read_results(stream, inbox):
    """Parse JSON lines from the result pipe into `inbox`; None marks the end."""
    try:
        while True:
            line = stream.readline(MAX_LINE)
            if not line:
                break
            try:
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise ValueError
            except ValueError:
                message = {"event": "garbage"}
            inbox.put(message)
    finally:
        stream.close()
        inbox.put(None)


class _Child:
    """One child process and the threads that read its three pipes."""

    def __init__(self, job_path, workdir, stdout):
        read_fd, write_fd = os.pipe()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": workdir, "LC_ALL": "C.UTF-8",
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, "-I", CHILD, str(write_fd), job_path],
                                     cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, pass_fds=(write_fd,), start_new_session=True)
        os.close(write_fd)  # only the child holds the write end: EOF means it is gone
        self.inbox = queue.Queue()
        self.stderr = bytearray()
        self.threads = [threading.Thread(target=_read_results, args=(os.fdopen(read_fd, "rb"), self.inbox)),
                        threading.Thread(target=_drain, args=(self.proc.stdout, stdout)),
                        threading.Thread(target=_drain, args=(self.proc.stderr, self.stderr))]
        for t in self.threads:
            t.daemon = True
            t.start()

    def next(self, timeout, run):
        """The next case/load message; None at EOF, "timeout" if none came in time."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return "timeout"
            if message is not None and message.get("event") == "numpy":
                run.numpy = True  # reported the moment it happens, even in a case that then hangs
                continue
            return message

    def numpy_mapped(self):
        """True if NumPy's compiled core is mapped into the child (Linux /proc).

        Extension modules are never unloaded, so this sees an import even after the
        submission removed the import hook or deleted numpy from sys.modules.
        """
        try:
            with open(f"/proc/{self.proc.pid}/maps") as maps:
                return any("_multiarray_umath" in line for line in maps)
        except OSError:  # not Linux, or the child is already gone
            return False

    def stop(self, run=None):
        """Kill the child's whole process group (it may have spawned more) and reap it."""
        if run is not None and self.numpy_mapped():
            run.numpy = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        code = self.proc.wait()
        for t in self.threads:
            t.join(timeout=2)
        return code


def run_submission(path, exercise, timeout=10.0, load_timeout=None):
    """Grade-run `path` (a .py file) on every case of `exercise`; never raises for a bad submission."""
    started = time.monotonic()
    cases = exercise.cases
    load_timeout = max(timeout, 5.0) if load_timeout is None else load_timeout
    run = Run(messages=[None] * len(cases))
    timeouts, start = 0, 0
    with tempfile.TemporaryDirectory(prefix="specdec-grade-") as workdir:
        while start < len(cases):
            job_path = os.path.join(workdir, f"job{start}.json")
            with open(job_path, "w") as f:
                json.dump({"path": os.path.abspath(path), "functions": list(exercise.functions),
                           "cases": [c.to_job(i) for i, c in enumerate(cases) if i >= start]}, f)
            child = _Child(job_path, workdir, run.stdout)
            first = child.next(load_timeout, run)
            if first == "timeout" or first is None or first.get("event") != "loaded":
                code = child.stop(run)
                if first == "timeout":
                    reason = f"timed out after {load_timeout:g} s while loading (an infinite loop at import?)"
                elif first is None:
                    reason = f"the process exited with code {code} while loading (sys.exit/os._exit at import?)"
                elif first.get("event") == "load_error":
                    reason = first.get("message", "failed to load")
                else:
                    reason = "wrote garbage to the grader's result channel while loading"
                if start == 0:
                    run.load_error = reason
                    break
                for i in range(start, len(cases)):
                    run.messages[i] = {"outcome": "not_run", "message": f"not run: on restart, {reason}"}
                break
            run.numpy = run.numpy or bool(first.get("numpy"))
            i = start
            while i < len(cases):
                message = child.next(timeout, run)
                if message == "timeout":
                    run.messages[i] = {"outcome": "timeout", "message": f"timed out after {timeout:g} s"}
                    timeouts += 1
                    break
                if message is None:
                    try:
                        code = child.proc.wait(timeout=2)
                    except subprocess.TimeoutExpired:  # it closed the channel but lives on
                        code = "unknown"
                    run.messages[i] = {"outcome": "died",
                                       "message": f"the process exited with code {code} during this case "
                                                  "(sys.exit/os._exit or a crash)"}
                    break
                if message.get("event") != "case" or message.get("index") != i:
                    run.messages[i] = {"outcome": "garbage",
                                       "message": "the submission wrote to the grader's result channel"}
                    break
                run.numpy = run.numpy or bool(message.get("numpy")) or child.numpy_mapped()
                run.messages[i] = message
                i += 1
            child.stop(run)
            start = i + 1 if i < len(cases) else i
            if timeouts >= MAX_TIMEOUTS:
                for j in range(start, len(cases)):
                    run.messages[j] = {"outcome": "not_run",
                                       "message": f"not run: {MAX_TIMEOUTS} cases already timed out"}
                break
    run.seconds = time.monotonic() - started
    return run
