"""How untrusted code runs: a bubblewrap sandbox, or (not fit for hostile code) a plain process.

`bwrap` mode (Linux with bubblewrap): the worker (`worker.py`) and the
submission run in new PID, network, IPC, UTS and mount namespaces
(`--die-with-parent`, `--new-session`). The sandbox's filesystem holds only:
the interpreter and its standard library (read-only, every site-packages
hidden under an empty tmpfs), the system's shared libraries (read-only, their
Python folders hidden), `/grader/worker.py`, the submission's private copy
alone in `/work` (read-only), a private 16 MiB `/tmp`, and a fresh `/proc`
showing only the sandbox. NumPy is there only when asked for, bound read-only
at /opt/pylib. There is no network, no course package, no other submission,
no gradebook. Run as root, bwrap sets this up and the worker then becomes a
random unprivileged uid in a user namespace of its own; run as a user, bwrap
makes the user namespace itself. Limits (setrlimit, in the worker before the
submission loads): CPU seconds, 2 GiB of address space, 64 open files,
16 MiB per written file, 32 processes. `kill()` kills the PID namespace's
init, which takes every process of the sandbox with it.

`process` mode: the same worker as a child process in a scratch directory,
killed by process group. It sees the whole machine as this user; the NumPy
guard and the memory-map check are best effort. `auto` picks bwrap when a
probe run works, else warns in one line and falls back to `process`.
"""

import functools
import importlib.util
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import sysconfig

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
NOT_SANDBOXED = ("warning: grading WITHOUT a sandbox ({}): submissions run as ordinary processes of this "
                 "user; fine for self-study, not for untrusted code")
LIB_DIRS = ("/lib", "/lib64", "/lib32", "/libx32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32")  # symlinks kept
LIMITS = {"RLIMIT_AS": 2 * 1024 ** 3, "RLIMIT_NOFILE": 64, "RLIMIT_FSIZE": 16 * 1024 ** 2, "RLIMIT_CORE": 0}
ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8",
       "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}


class SandboxError(RuntimeError):
    """`--sandbox bwrap` was asked for and cannot run here."""


def numpy_dirs():
    """NumPy's package folder (and its bundled libraries), found without importing it; [] if absent."""
    spec = importlib.util.find_spec("numpy")
    if spec is None or not spec.origin:
        return []
    package = os.path.dirname(os.path.realpath(spec.origin))
    return [d for d in (package, package + ".libs") if os.path.isdir(d)]


def _under(path, folders):
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in folders)


def _library_dirs():
    """Folders of the shared libraries this process has mapped (libc, libm, libssl ...) and of the loader.

    Folders of Python packages (site-packages, dist-packages, a virtualenv) never count, even when
    this process imported NumPy: the sandbox gets libraries, not packages.
    """
    dirs = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and ".so" in os.path.basename(fields[5]):
                d = os.path.dirname(os.path.realpath(fields[5].strip()))
                if not {"site-packages", "dist-packages"} & set(d.split("/")) and not _under(d, [sys.prefix]):
                    dirs.add(d)
    for d in LIB_DIRS:  # the dynamic loader, at the path the interpreter's ELF header names
        if os.path.isdir(d) and not os.path.islink(d) and any(n.startswith(("ld-linux", "ld64", "ld-musl"))
                                                               for n in os.listdir(d)):
            dirs.add(d)
    return dirs


def _python_dirs():
    """(folders to bind read-only, folders to hide under an empty tmpfs) for the running interpreter."""
    paths = {k: os.path.realpath(v) for k, v in sysconfig.get_paths(
        vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix}).items()}
    prefix = os.path.realpath(sys.base_prefix)
    binds = sorted(_library_dirs())
    for path in (os.path.realpath(sys.executable), paths["stdlib"], paths["platstdlib"]):
        if not _under(path, binds):
            # A private prefix (pyenv, a tarball) is bound whole; a system one (/usr) file by file.
            system = prefix in ("/", "/usr", "/usr/local")
            binds.append(prefix if _under(path, [prefix]) and not system else path)
    stdlib = {paths["stdlib"], paths["platstdlib"]}
    hide = {paths["purelib"], paths["platlib"]}
    hide.update(os.path.join(s, n) for s in stdlib for n in ("site-packages", "dist-packages"))
    for d in binds:  # other Pythons' folders inside a library folder (Fedora's /usr/lib64/python3.x ...)
        if os.path.isdir(d) and d not in stdlib:
            hide.update(os.path.join(d, n) for n in os.listdir(d) if n.startswith("python"))
    hide = sorted(h for h in hide - stdlib if os.path.isdir(h) and _under(h, binds) and not _under(paths["stdlib"], [h]))
    binds = sorted({d for d in binds if not _under(d, [b for b in binds if b != d])})  # no folder inside another
    return binds, hide


def _mkdirs(path, made, argv):
    """--dir every missing ancestor of `path` with mode 0755 (bwrap would make them 0700)."""
    parts = path.strip("/").split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = "/" + "/".join(parts[:i])
        if d not in made:
            made.add(d)
            argv += ["--perms", "0755", "--dir", d]


def bwrap_argv(submission, numpy=False, info_fd=None):
    """The bwrap command line (without the interpreter's command) for one sandbox."""
    argv = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--clearenv"]
    if os.geteuid() == 0:  # the worker needs these two to leave root; it drops them with root
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user", "--uid", "1000", "--gid", "1000"]
    for key, value in {**ENV, "HOME": "/tmp", "TMPDIR": "/tmp"}.items():
        argv += ["--setenv", key, value]
    made = set()
    for d in LIB_DIRS:
        if os.path.islink(d):
            argv += ["--symlink", os.readlink(d), d]
            made.add(d)
    binds, hide = _python_dirs()
    for d in binds:
        _mkdirs(d, made, argv)
        argv += ["--ro-bind", d, d]
    for d in hide:
        argv += ["--tmpfs", d]
    if numpy:
        for d in numpy_dirs():
            target = "/opt/pylib/" + os.path.basename(d)
            _mkdirs(target, made, argv)
            argv += ["--ro-bind", d, target]
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(16 * 1024 ** 2), "--tmpfs", "/tmp",
             "--perms", "0755", "--dir", "/work", "--perms", "0755", "--dir", "/grader",
             "--ro-bind", WORKER, "/grader/worker.py", "--ro-bind", submission, "/work/" + os.path.basename(submission),
             "--chdir", "/work"]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    return argv


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
        argv = ["bwrap", "--args", str(args_read), python, *command, "/grader/worker.py", str(reply_fd)]
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
