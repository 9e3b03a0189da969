"""How untrusted code runs: a bubblewrap sandbox, or (not fit for hostile code) a plain process.

`bwrap` mode (Linux with bubblewrap): the worker (`worker.py`) and the
submission run in new PID, network, IPC, UTS and mount namespaces
(`--die-with-parent`, `--new-session`), on the filesystem `mounts.py`
describes. Run as root, bwrap sets it up and the worker then becomes a
random unprivileged uid in a user namespace of its own; run as a user, bwrap
makes the user namespace itself. Limits (setrlimit, in the worker before the
submission loads): CPU seconds, 2 GiB of address space, 64 open files,
16 MiB per written file, 32 processes. `kill()` kills the PID namespace's
init, which takes every process of the sandbox with it; bwrap's own command
line comes through `--args`, so the sandbox's /proc shows no host path.

`process` mode: the same worker as a child process in a scratch directory,
killed by process group. It sees the whole machine as this user; the NumPy
guard and the memory-map check are best effort. `auto` picks bwrap when a
probe run works, else warns in one line and falls back to `process`.

    >>> resolve("process")
    ('process', '')
"""

import functools
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys

from .mounts import ENV, WORKER, bwrap_argv, numpy_dirs

NOT_SANDBOXED = ("warning: grading WITHOUT a sandbox ({}): submissions run as ordinary processes of this "
                 "user; fine for self-study, not for untrusted code")
LIMITS = {"RLIMIT_AS": 2 * 1024 ** 3, "RLIMIT_NOFILE": 64, "RLIMIT_FSIZE": 16 * 1024 ** 2, "RLIMIT_CORE": 0}


class SandboxError(RuntimeError):
    """`--sandbox bwrap` was asked for and cannot run here."""


@functools.lru_cache(maxsize=None)
def bwrap_problem():
    """Why bwrap cannot sandbox here (a short phrase), or '' when a probe run works."""
    if not sys.platform.startswith("linux"):
        return "bubblewrap is Linux-only"
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    probe = ("import sys; sys.path.insert(0, '/grader'); import worker; "
             "worker.apply_limits({'RLIMIT_NPROC': 32}); " + ("worker.leave_root(%d); " % _uid() if os.geteuid() == 0 else "")
             + "import os; assert os.getuid() != 0 and not os.path.exists('/root/.cache')")
    argv = bwrap_argv(WORKER) + [os.path.realpath(sys.executable), "-s", "-S", "-B", "-c", probe]
    try:
        result = subprocess.run(argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap failed to start: {exc}"
    if result.returncode != 0:
        lines = result.stderr.decode(errors="replace").strip().splitlines() or ["no message"]
        return f"bwrap does not work here: {lines[-1][:200]}"
    return ""


def resolve(mode):
    """('bwrap' | 'process', warning line or '') for --sandbox auto | bwrap | process."""
    if mode == "process":
        return "process", ""
    problem = bwrap_problem()
    if not problem:
        return "bwrap", ""
    if mode == "bwrap":
        raise SandboxError(f"--sandbox bwrap: {problem}")
    return "process", NOT_SANDBOXED.format(problem)


def _uid():
    """A random unprivileged uid for one sandbox (far above real users' uids)."""
    return 200_000 + secrets.randbelow(2 ** 30)


def worker_config(mode, submission, display, functions, numpy, max_seconds):
    """The first message the worker reads: what to load, which limits, which identity."""
    limits = dict(LIMITS, RLIMIT_CPU=int(max_seconds) + 5)
    config = {"path": submission, "display": display, "functions": list(functions), "limits": limits,
              "sys_path": [], "uid": None, "block_numpy": False}
    if mode == "bwrap":
        config.update(path="/work/" + os.path.basename(submission), limits=dict(limits, RLIMIT_NPROC=32))
        config["uid"] = _uid() if os.geteuid() == 0 else None
        config["sys_path"] = ["/opt/pylib"] if numpy else []
    elif numpy:
        config["sys_path"] = sorted({os.path.dirname(d) for d in numpy_dirs()})
    else:
        config["block_numpy"] = True
    return config


def spawn(mode, submission, numpy, reply_fd):
    """Start the worker; return (Popen, pid that kill() must kill: the PID namespace's init)."""
    python = os.path.realpath(sys.executable)
    command = ["-s", "-S", "-B"]
    if mode == "bwrap":
        info_read, info_write = os.pipe()
        args_read, args_write = os.pipe()  # --args: the sandbox's /proc/1/cmdline shows no host paths
        os.write(args_write, b"\0".join(a.encode() for a in bwrap_argv(submission, numpy, info_write)[1:]) + b"\0")
        os.close(args_write)
        argv = [shutil.which("bwrap"), "--args", str(args_read), python, *command, "/grader/worker.py", str(reply_fd)]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=(reply_fd, info_write, args_read), start_new_session=True, env={})
        os.close(info_write)
        os.close(args_read)
        init = _read_child_pid(info_read)
        os.close(info_read)
        return proc, init
    env = dict(ENV, HOME=os.path.dirname(submission), TMPDIR=os.path.dirname(submission))
    proc = subprocess.Popen([python, *command, WORKER, str(reply_fd)], cwd=os.path.dirname(submission), env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=(reply_fd,), start_new_session=True)
    return proc, None


def _read_child_pid(fd, seconds=10.0):
    """bwrap's --info-fd JSON gives the outside pid of the sandbox's init; None if it never came."""
    text = b""
    while b"}" not in text:
        ready, _, _ = select.select([fd], [], [], seconds)
        chunk = os.read(fd, 4096) if ready else b""
        if not chunk:
            break
        text += chunk
    digits = text.partition(b'"child-pid":')[2].strip().split(b",")[0].split(b"}")[0].strip()
    return int(digits) if digits.isdigit() else None


def kill(proc, init):
    """Kill everything the sandbox started: its PID namespace's init (bwrap) or its process group."""
    targets = [(os.kill, init)] if init else []
    targets += [(os.killpg, proc.pid), (os.kill, proc.pid)]
    for fn, pid in targets:
        try:
            fn(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return proc.wait()


def numpy_mapped(proc):
    """process mode: True if NumPy's compiled core is mapped into the worker (Linux /proc; never unloaded)."""
    try:
        with open(f"/proc/{proc.pid}/maps") as maps:
            return any("_multiarray_umath" in line for line in maps)
    except OSError:
        return False
