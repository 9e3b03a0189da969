"""How untrusted code runs: a bubblewrap sandbox, or (not fit for hostile code) a plain process.

`bwrap` mode (Linux with bubblewrap): the worker (`worker.py`) and the
submission run in new PID, network, IPC, UTS and mount namespaces
(`--die-with-parent`, `--new-session`), on the filesystem `mounts.py`
describes. Run as root, bwrap sets it up and the worker then becomes a
random unprivileged uid; run as a user, bwrap makes a user namespace. Before
the submission loads, the worker sets the limits below and a seccomp filter
(`worker.harden`: no new namespaces or mounts, no SysV IPC, no kernel keyring, no
io_uring, userfaultfd, perf_event_open, bpf or ptrace), and each sandbox runs as a uid of its own. The limits bound
the whole sandbox, not one process: at most 3 processes or threads, each with
512 MiB of address space and 32 open files of at most 4 MiB, so under 2 GiB
in all (plus its 16 MiB /tmp); and CPU seconds. `kill()` kills bwrap itself (our own
child, so its pid cannot have been reused); `--die-with-parent` then takes
every process of the sandbox with it. bwrap's command line comes through
`--args`, so the sandbox's /proc shows no host path.

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
import shutil
import signal
import subprocess
import sys

from .mounts import ENV, WORKER, bwrap_argv, numpy_dirs

NOT_SANDBOXED = ("warning: grading WITHOUT a sandbox ({}): submissions run as ordinary processes of this "
                 "user; fine for self-study, not for untrusted code")
MiB = 1024 ** 2
LIMITS = {"RLIMIT_AS": 512 * MiB, "RLIMIT_NOFILE": 32, "RLIMIT_FSIZE": 4 * MiB, "RLIMIT_CORE": 0}
PROCESSES = 3  # bwrap mode: RLIMIT_NPROC (processes and threads), per sandbox: its uid or user namespace is its own


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
             f"worker.apply_limits({{'RLIMIT_NPROC': {PROCESSES}}}); "
             + ("worker.leave_root(%d); " % _uid() if os.geteuid() == 0 else "")
             + "assert worker.harden(), 'no seccomp filter for this machine'; "
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


def fresh_identity(config):
    """`config` with a uid no earlier sandbox had (root only): nothing the kernel keeps per uid joins two sandboxes.

    >>> fresh_identity({"uid": None})
    {'uid': None}
    """
    return dict(config, uid=_uid()) if config.get("uid") else config


def worker_config(mode, submission, display, functions, numpy, max_seconds):
    """The first message the worker reads: what to load, which limits, which identity."""
    limits = dict(LIMITS, RLIMIT_CPU=int(max_seconds) + 5)
    config = {"path": submission, "display": display, "functions": list(functions), "limits": limits,
              "sys_path": [], "uid": None, "block_numpy": False}
    if mode == "bwrap":
        config.update(path="/work/" + os.path.basename(submission), limits=dict(limits, RLIMIT_NPROC=PROCESSES))
        config["uid"] = _uid() if os.geteuid() == 0 else None
        config["sys_path"] = ["/opt/pylib"] if numpy else []
    elif numpy:
        config["sys_path"] = sorted({os.path.dirname(d) for d in numpy_dirs()})
    else:
        config["block_numpy"] = True
    return config


def spawn(mode, submission, numpy, reply_fd):
    """Start the worker; return its Popen (bwrap itself in bwrap mode)."""
    python = os.path.realpath(sys.executable)
    command = ["-s", "-S", "-B"]
    if mode == "bwrap":
        args_read, args_write = os.pipe()  # --args: the sandbox's /proc/1/cmdline shows no host paths
        worker_read, worker_write = os.pipe()  # the worker as data: its host path is not in /proc/self/mountinfo
        os.write(args_write, b"\0".join(a.encode() for a in bwrap_argv(submission, numpy, worker_read)[1:]) + b"\0")
        os.close(args_write)
        with open(WORKER, "rb") as f:
            os.write(worker_write, f.read())  # a few KiB: the pipe holds it
        os.close(worker_write)
        argv = [shutil.which("bwrap"), "--args", str(args_read), python, *command, "/grader/worker.py", str(reply_fd)]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=(reply_fd, args_read, worker_read), start_new_session=True, env={})
        os.close(args_read)
        os.close(worker_read)
        return proc
    env = dict(ENV, HOME=os.path.dirname(submission), TMPDIR=os.path.dirname(submission))
    return subprocess.Popen([python, *command, WORKER, str(reply_fd)], cwd=os.path.dirname(submission), env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=(reply_fd,), start_new_session=True)


def kill(proc):
    """Kill everything the sandbox started: bwrap (the sandbox dies with it) or the worker's process group."""
    for fn in (os.killpg, os.kill):
        try:
            fn(proc.pid, signal.SIGKILL)
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
