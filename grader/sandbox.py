"""How untrusted code runs: a bubblewrap sandbox, or (not fit for hostile code) a plain process.

`bwrap` mode (Linux with bubblewrap): the worker (`worker.py`) and the
submission run in new PID, network, IPC, UTS and mount namespaces
(`--die-with-parent`, `--new-session`), on the filesystem `mounts.py`
describes. Run as root, bwrap sets it up and the worker then becomes a
random unprivileged uid; run as a user, bwrap makes a user namespace. Before
the submission loads, the worker sets the limits below and a seccomp filter
(`worker.harden`: no new namespaces or mounts, no SysV IPC, no kernel keyring, no
io_uring, userfaultfd, perf_event_open, bpf or ptrace; nothing that reads or sets state a later sandbox
could observe: the page cache's residency, the global inode counter, aio contexts, file locks, inotify;
see worker.REFUSED), and each sandbox runs as a uid of its own. Where this machine has writable cgroup v1
memory, cpuacct and pids hierarchies, each sandbox also gets a cgroup of its own (`Cgroup`: memory, CPU
share, task count), joined before bwrap starts and removed, its tasks killed, with the sandbox; time limits
count its CPU time (`cpu_seconds`); `limits_note()` says which bounds applied. The limits bound
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

`user` mode (root only; what a Gradescope container that refuses namespaces gets):
`process` mode, but the worker becomes a fresh unprivileged uid before the
submission loads, with bwrap mode's limits (the process count included: the uid
is its own) and seccomp filter. It sees the machine as that nobody sees it:
whatever is readable by all, nothing that root keeps to itself.

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
import time

from .mounts import ENV, WORKER, bwrap_argv, numpy_dirs, package_dirs, prewarm, readable_files

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
    if mode == "user":
        if os.geteuid() != 0:
            raise SandboxError("--sandbox user needs root (it runs each submission as a fresh unprivileged uid)")
        return "user", ""
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
        config["sys_path"] = ["/opt/pylib"] if numpy or package_dirs() else []
        config["block_numpy"] = not numpy  # none on its filesystem, and its import is NumpyAbsent (worker.load)
        return config
    if mode == "user":
        config.update(uid=_uid(), limits=dict(limits, RLIMIT_NPROC=PROCESSES))
    config["sys_path"] = sorted({os.path.dirname(d) for d in (numpy_dirs() if numpy else []) + package_dirs()})
    config["block_numpy"] = not numpy
    return config


# ---- cgroups: one per sandbox, where this machine lets the grader make them ------------------------------------------
CGROUP_ROOT = "/sys/fs/cgroup"
CONTROLLERS = ("memory", "cpu", "cpuacct", "pids")  # cgroup v1 hierarchies (mounted apart or together)
MEMORY = 1024 * MiB  # per sandbox, page cache and kernel memory (pipes, page tables) included
CPU_SHARES = 1024  # a sandbox's processes, however many sessions they start, weigh as one process
PIDS = PROCESSES + 2  # bwrap's own two processes (its monitor and the namespace's init), then the worker's


@functools.lru_cache(maxsize=None)
def cgroup_parents():
    """{controller: this process's own cgroup folder} for each v1 controller whose folder it can write; {} if none.

    A sandbox's cgroup is made under the grader's own (limits nest: the machinery's bound on the grader holds
    for its sandboxes too). cgroup v2 alone, a read-only /sys/fs/cgroup, or not root: {} (rlimits only).
    """
    parents = {}
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return parents
    for line in lines:
        _, names, path = (line.split(":", 2) + ["", ""])[:3]
        for name in names.split(","):
            if name in CONTROLLERS:
                folder = next((os.path.join(CGROUP_ROOT, m) for m in (name, "cpu,cpuacct", "cpuacct,cpu")
                               if os.path.isdir(os.path.join(CGROUP_ROOT, m))), None)
                if folder and os.access(os.path.join(folder + path, "cgroup.procs"), os.W_OK):
                    parents[name] = folder + path.rstrip("/")
    return parents if {"memory", "cpuacct", "pids"} <= set(parents) else {}


def limits_note():
    """What bounds a sandbox here, in one line (the report's `sandbox_limits`)."""
    rl = (f"rlimits (address space {LIMITS['RLIMIT_AS'] // MiB} MiB, {PROCESSES} processes, "
          f"{LIMITS['RLIMIT_NOFILE']} files of {LIMITS['RLIMIT_FSIZE'] // MiB} MiB per process)")
    if cgroup_parents():
        return (f"a cgroup per sandbox (memory {MEMORY // MiB} MiB, {PIDS} tasks, cpu.shares {CPU_SHARES}) and {rl}; "
                "time limits in the sandbox's CPU time")
    return f"{rl} only (no writable cgroup v1 memory/cpuacct/pids here); time limits in the sandbox's CPU time " \
           "(summed over its processes)"


class Cgroup:
    """One sandbox's cgroup in every controller; `procs` are the files its first process writes its pid to."""

    def __init__(self):
        self.folders = {}
        name = f"specdec-{os.getpid()}-{secrets.token_hex(6)}"
        for controller, parent in cgroup_parents().items():
            if parent in self.folders.values():  # controllers mounted together: one folder
                self.folders[controller] = parent + "/" + name
                continue
            _sweep(parent)
            folder = os.path.join(parent, name)
            os.mkdir(folder)
            self.folders[controller] = folder
        self._write("memory", "memory.limit_in_bytes", MEMORY)
        self._write("memory", "memory.memsw.limit_in_bytes", MEMORY, required=False)
        self._write("cpu", "cpu.shares", CPU_SHARES, required=False)
        self._write("pids", "pids.max", PIDS)
        self.procs = sorted({os.path.join(f, "cgroup.procs") for f in self.folders.values()})

    def _write(self, controller, name, value, required=True):
        folder = self.folders.get(controller)
        if folder is None:
            return
        try:
            with open(os.path.join(folder, name), "w") as f:
                f.write(str(value))
        except OSError:
            if required:
                raise

    def cpu_seconds(self):
        try:
            with open(os.path.join(self.folders["cpuacct"], "cpuacct.usage")) as f:
                return int(f.read()) / 1e9
        except (OSError, ValueError, KeyError):
            return 0.0

    def _ids(self, name):
        try:
            with open(os.path.join(self.folders["pids"], name)) as f:
                return [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            return []

    def pids(self):
        return self._ids("cgroup.procs")

    def tasks(self):
        """Every thread of every process in it (the `tasks` file: thread ids)."""
        return self._ids("tasks")

    def remove(self):
        """Kill what is left in it, wait until it is empty (no process of it outlives its sandbox), remove it."""
        deadline = time.monotonic() + 5
        while True:
            left = self.pids()
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.005)
        for folder in sorted(set(self.folders.values()), reverse=True):
            for _ in range(200):
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # busy for a moment after its last task is gone
                    time.sleep(0.005)


def _sweep(parent):
    """Remove empty sandbox cgroups that a grading process killed before it could left behind."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) == 3 and parts[0] == "specdec" and parts[1].isdigit() and not os.path.exists(f"/proc/{parts[1]}"):
            try:
                os.rmdir(os.path.join(parent, name))
            except OSError:
                pass


# The cgroup is joined before bwrap or the worker starts: a shell writes its own pid, then becomes the command.
JOIN = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 111; shift; n=$((n - 1)); done; exec "$@"'


def spawn(mode, submission, numpy, reply_fd):
    """Start the worker; return its Popen (bwrap itself in bwrap mode), with `.cgroup` (a Cgroup, or None).

    In bwrap mode every file the sandbox can read is made resident in the page cache first (`mounts.prewarm`).
    """
    python = os.path.realpath(sys.executable)
    command = ["-s", "-S", "-B"]
    cgroup = None
    if cgroup_parents() and os.path.exists("/bin/sh"):
        try:
            cgroup = Cgroup()
        except OSError:
            cgroup = None
    join = ["/bin/sh", "-c", JOIN, "sh", str(len(cgroup.procs)), *cgroup.procs] if cgroup else []
    if mode == "bwrap":
        files = readable_files(submission, numpy)
        prewarm(files[:-1])
        prewarm(files[-1:], hold=False)   # the submission's copy: one file of one grading
        args_read, args_write = os.pipe()  # --args: the sandbox's /proc/1/cmdline shows no host paths
        worker_read, worker_write = os.pipe()  # the worker as data: its host path is not in /proc/self/mountinfo
        os.write(args_write, b"\0".join(a.encode() for a in bwrap_argv(submission, numpy, worker_read)[1:]) + b"\0")
        os.close(args_write)
        with open(WORKER, "rb") as f:
            os.write(worker_write, f.read())  # under 64 KiB: the pipe holds it
        os.close(worker_write)
        argv = [shutil.which("bwrap"), "--args", str(args_read), python, *command, "/grader/worker.py", str(reply_fd)]
        proc = subprocess.Popen(join + argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=(reply_fd, args_read, worker_read), start_new_session=True, env={})
        os.close(args_read)
        os.close(worker_read)
        proc.cgroup = cgroup
        return proc
    env = dict(ENV, HOME=os.path.dirname(submission), TMPDIR=os.path.dirname(submission))
    proc = subprocess.Popen(join + [python, *command, WORKER, str(reply_fd)], cwd=os.path.dirname(submission),
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=(reply_fd,), start_new_session=True)
    proc.cgroup = cgroup
    return proc


def _tree(proc):
    """[(pid, [its thread ids])] for bwrap (or the worker) and every descendant (Linux /proc)."""
    out, todo, seen = [], [proc.pid], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
            for tid in tids:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
        out.append((pid, tids))
    return out


def cpu_seconds(proc):
    """The CPU time the sandbox has used: its cgroup's, else the sum over bwrap (or the worker) and its descendants.

    Without a cgroup a process that left the tree (process mode: setsid and a double fork) is not counted.
    """
    if getattr(proc, "cgroup", None) is not None:
        return proc.cgroup.cpu_seconds()
    total = 0
    for pid, _ in _tree(proc):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def _tasks(proc):
    """The thread ids of every process of the sandbox: its cgroup's, else those of its process tree."""
    if getattr(proc, "cgroup", None) is not None:
        return proc.cgroup.tasks()
    return [tid for _, tids in _tree(proc) for tid in tids]


def running(proc):
    """True if some thread of the sandbox is running, waiting for a CPU, or waiting on the disk (states R, D);
    False if every one sleeps or is stopped: the sandbox is waiting for something that is not the machine.

    What the time limits call "blocked" (session.py): a file that sleeps, or waits on a pipe, is not slowed by
    the host, so its waiting is its own; a thread waiting for a CPU that another program holds is running.
    None when no thread can be read (the sandbox is gone, or /proc does not show it).
    """
    states = []
    for tid in _tasks(proc):
        try:
            with open(f"/proc/{tid}/stat", "rb") as f:
                states.append(f.read().rpartition(b")")[2][1:2])
        except OSError:
            continue
    if not states:
        return None
    return any(s in (b"R", b"D") for s in states)


def kill(proc):
    """Kill everything the sandbox started: bwrap (the sandbox dies with it) or the worker's process group; then
    every process left in its cgroup, and remove the cgroup (no process of it outlives this call)."""
    for fn in (os.killpg, os.kill):
        try:
            fn(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    code = proc.wait()
    if getattr(proc, "cgroup", None) is not None:
        proc.cgroup.remove()
    return code


def numpy_mapped(proc):
    """process mode: True if NumPy's compiled core is mapped into the worker (Linux /proc; never unloaded)."""
    try:
        with open(f"/proc/{proc.pid}/maps") as maps:
            return any("_multiarray_umath" in line for line in maps)
    except OSError:
        return False
