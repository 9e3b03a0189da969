"""What a bubblewrap sandbox contains: the interpreter, the shared libraries, the worker, one submission.

`bwrap_argv` lists it. Read-only binds: the folders of the shared libraries
this process has mapped (libc, libm, libssl ...) and of the dynamic loader;
the interpreter's prefix (a private one such as pyenv's, bound whole) or its
binary and standard library (a system one, /usr, file by file); the worker
script at /grader/worker.py; the submission's private copy, alone in /work.
Hidden under empty tmpfs mounts: every site-packages and dist-packages folder
inside those binds, and other Pythons' folders (/usr/lib/python3 ...). Fresh:
/proc (the sandbox's own processes only), /dev (null, zero, random, urandom),
a 16 MiB /tmp. NumPy appears only when asked for, read-only, at /opt/pylib.
Nothing else: no /etc, no /home, no course package, no network.

    >>> argv = bwrap_argv("/tmp/x/submission.py")
    >>> argv[argv.index("--chdir") + 1], "/tmp/x/submission.py" in argv
    ('/work', True)
"""

import importlib.util
import os
import sys
import sysconfig

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
# The system's library folders (those that are symlinks are recreated as symlinks in the sandbox).
LIB_DIRS = ("/lib", "/lib64", "/lib32", "/libx32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32")
ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8",
       "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}


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
    dirs, venv = set(), [sys.prefix] if sys.prefix != sys.base_prefix else []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and ".so" in os.path.basename(fields[5]):
                d = os.path.dirname(os.path.realpath(fields[5].strip()))
                if not {"site-packages", "dist-packages"} & set(d.split("/")) and not _under(d, venv):
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
    hide = sorted(h for h in hide - stdlib
                  if os.path.isdir(h) and _under(h, binds) and not _under(paths["stdlib"], [h]))
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


def bwrap_argv(submission, numpy=False, worker_fd=None):
    """The bwrap command line (without the interpreter's command) for one sandbox.

    The worker is bound from its file, or copied from `worker_fd` (read-only) when given.
    """
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
             *(["--ro-bind", WORKER] if worker_fd is None else ["--ro-bind-data", str(worker_fd)]), "/grader/worker.py",
             "--ro-bind", submission, "/work/" + os.path.basename(submission), "--chdir", "/work"]
    return argv
