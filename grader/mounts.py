"""What a bubblewrap sandbox contains: the interpreter, the shared libraries, the worker, one submission.

`bwrap_argv` lists it. Read-only binds: the shared libraries the interpreter,
its extension modules (and NumPy's, when bound) need, file by file (the
closure of their ELF DT_NEEDED entries, and the dynamic loader: not their
folders, 711 MB here); the interpreter's prefix (a private one such as pyenv's,
bound whole) or its binary and standard library (a system one, /usr); the worker
script at /grader/worker.py; the submission's private copy, alone in /work.
Hidden under empty tmpfs mounts: every site-packages and dist-packages folder
inside those binds, other Pythons' folders (/usr/lib/python3 ...), and what
grading never needs (the standard library's test suite, idlelib, turtledemo,
ensurepip, the static library in config-3.x). Fresh: /dev (null, zero, random,
urandom), a 16 MiB /tmp. No /proc (issue 19): its global files (/proc/stat,
loadavg, vmstat, pressure, sys ...) and the inode numbers it hands out (from the
kernel's global counter, as pipes' are) told a sandbox what an earlier one did.
NumPy appears only when asked for, read-only, at /opt/pylib, beside what a notebook
may import where Jupyter has it (COURSE_PACKAGES: tqdm). Nothing else: no /etc, no
/home, no course package, no network.

Every page of every file a sandbox can read is made resident in the page cache
before it starts (`prewarm`): a sandbox cannot evict one (the seccomp filter
refuses posix_fadvise, MADV_PAGEOUT ...), so what it reads or times of their
residency is the same whatever an earlier sandbox did.

    >>> argv = bwrap_argv("/tmp/x/submission.py")
    >>> argv[argv.index("--chdir") + 1], "/tmp/x/submission.py" in argv
    ('/work', True)
"""

import ctypes
import functools
import importlib.util
import os
import stat
import struct
import sys
import sysconfig

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
# The system's library folders (those that are symlinks are recreated as symlinks in the sandbox).
LIB_DIRS = ("/lib", "/lib64", "/lib32", "/libx32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32")
# Never needed to grade, and large: hidden (the test suite alone is 123 MB of files to keep resident).
UNNEEDED = ("test", "idlelib", "turtledemo", "ensurepip", "lib2to3/tests")
ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8",
       "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}


# What the course's requirements install that a learner's notebook may import where Jupyter has it: pure Python,
# bound read-only at /opt/pylib in every run (the plain-Python run too: none of them loads NumPy).
COURSE_PACKAGES = ("tqdm",)


@functools.lru_cache(maxsize=None)
def package_dirs():
    """The folders of COURSE_PACKAGES that this interpreter has, found without importing them (once: a list shared
    by every caller, never changed)."""
    out = []
    for name in COURSE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            out += [os.path.realpath(d) for d in spec.submodule_search_locations if os.path.isdir(d)]
    return out


@functools.lru_cache(maxsize=None)
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


def _elf_needs(path):
    """(DT_NEEDED names, RPATH/RUNPATH folders, PT_INTERP) of a 64-bit little-endian ELF file; empty if not one."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return [], [], None
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return [], [], None
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    loads, dynamic, interp = [], None, None
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:
            dynamic = (p_offset, p_filesz)
        elif p_type == 3:
            interp = data[p_offset:p_offset + p_filesz].rstrip(b"\0").decode(errors="replace")
    if dynamic is None:
        return [], [], interp
    entries = [struct.unpack_from("<qQ", data, dynamic[0] + 16 * i) for i in range(dynamic[1] // 16)]
    strtab = next((v for t, v in entries if t == 5), None)
    offset = next((o + strtab - a for a, o, n in loads if a <= (strtab or -1) < a + n), None)
    if offset is None:
        return [], [], interp

    def text(at):
        return data[offset + at:data.index(b"\0", offset + at)].decode(errors="replace")
    origin = os.path.dirname(os.path.realpath(path))
    needed = [text(v) for t, v in entries if t == 1]
    paths = [d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
             for t, v in entries if t in (15, 29) for d in text(v).split(":") if d]
    return needed, paths, interp


@functools.lru_cache(maxsize=None)
def library_files(numpy=False):
    """{path in the sandbox: file on the host} for the shared libraries the sandbox's code needs, and the loader.

    The closure of DT_NEEDED from the interpreter, its extension modules (lib-dynload) and, with `numpy`,
    NumPy's; each name looked up as the loader would (the object's RPATH/RUNPATH, then the folders of the
    libraries this process has mapped, then the system's). Libraries inside a folder bound whole are left out.
    """
    stdlib = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    roots = [os.path.realpath(sys.executable)]
    dynload = os.path.join(os.path.realpath(stdlib["platstdlib"]), "lib-dynload")
    if os.path.isdir(dynload):
        roots += [os.path.join(dynload, n) for n in sorted(os.listdir(dynload)) if n.endswith(".so")]
    if numpy:
        for d in numpy_dirs():
            roots += [os.path.join(r, n) for r, _, names in os.walk(d) for n in sorted(names) if ".so" in n]
    search = sorted(_library_dirs()) + [d for d in LIB_DIRS + ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                                                 "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
                                         if os.path.isdir(d)]
    found, todo, seen = {}, list(roots), set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        needed, rpaths, interp = _elf_needs(path)
        if interp:
            found[os.path.join(os.path.realpath(os.path.dirname(interp)), os.path.basename(interp))] = \
                os.path.realpath(interp)
        for name in needed:
            for d in rpaths + search:
                candidate = os.path.join(d, name)
                if os.path.isfile(candidate):
                    target = os.path.join(os.path.realpath(d), name)
                    found[target] = os.path.realpath(candidate)
                    todo.append(candidate)
                    break
    return found


def _python_dirs():
    """(folders to bind read-only, folders to hide under an empty tmpfs) for the running interpreter."""
    paths = {k: os.path.realpath(v) for k, v in sysconfig.get_paths(
        vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix}).items()}
    prefix = os.path.realpath(sys.base_prefix)
    binds = []
    for path in (os.path.realpath(sys.executable), paths["stdlib"], paths["platstdlib"]):
        if not _under(path, binds):
            # A private prefix (pyenv, a tarball) is bound whole; a system one (/usr) file by file.
            system = prefix in ("/", "/usr", "/usr/local")
            binds.append(prefix if _under(path, [prefix]) and not system else path)
    stdlib = {paths["stdlib"], paths["platstdlib"]}
    hide = {paths["purelib"], paths["platlib"]}
    hide.update(os.path.join(s, n) for s in stdlib for n in ("site-packages", "dist-packages") + UNNEEDED)
    hide.update(os.path.join(s, n) for s in stdlib for n in os.listdir(s) if n.startswith("config-"))
    for d in binds:  # other Pythons' folders inside a bound folder (a prefix's lib/python2.7 ...)
        lib = os.path.join(d, "lib")
        if os.path.isdir(lib) and d not in stdlib:
            hide.update(os.path.join(lib, n) for n in os.listdir(lib) if n.startswith("python"))
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
    for target, source in sorted(library_files(numpy).items()):
        if not _under(target, binds + numpy_dirs()):  # NumPy's own libraries come with it, at /opt/pylib
            _mkdirs(target, made, argv)
            argv += ["--ro-bind", source, target]
    for d in hide:
        argv += ["--tmpfs", d]
    for d in (numpy_dirs() if numpy else []) + package_dirs():
        target = "/opt/pylib/" + os.path.basename(d)
        _mkdirs(target, made, argv)
        argv += ["--ro-bind", d, target]
    argv += ["--dev", "/dev", "--perms", "1777", "--size", str(16 * 1024 ** 2), "--tmpfs", "/tmp",
             "--perms", "0755", "--dir", "/work", "--perms", "0755", "--dir", "/grader",
             *(["--ro-bind", WORKER] if worker_fd is None else ["--ro-bind-data", str(worker_fd)]), "/grader/worker.py",
             "--ro-bind", submission, "/work/" + os.path.basename(submission), "--chdir", "/work"]
    return argv


def readable_files(submission, numpy=False):
    """Every regular file a sandbox can read that another sandbox could read too (what `prewarm` keeps resident);
    the submission's own copy last."""
    binds, hide = _python_dirs()
    files = list(_files_under(tuple(binds), tuple(hide)))
    files += sorted({f for f in library_files(numpy).values() if not _under(f, binds)})
    files += _files_under(tuple((numpy_dirs() if numpy else []) + package_dirs()), ())
    return files + [submission]


@functools.lru_cache(maxsize=None)
def _files_under(folders, hidden):
    out = []
    for folder in folders:
        for root, dirs, names in os.walk(folder):
            dirs[:] = [d for d in dirs if not _under(os.path.join(root, d), hidden)]
            for name in names:
                path = os.path.join(root, name)
                try:
                    if stat.S_ISREG(os.lstat(path).st_mode):
                        out.append(path)
                except OSError:
                    pass
    return tuple(out)


class _Cachestat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("cache", "dirty", "writeback", "evicted", "recently_evicted")]


_CACHESTAT = {"x86_64": 451, "aarch64": 451}.get(os.uname().machine)


_HELD = {}   # path -> (descriptor, size): the files every sandbox binds, kept open by this process (`prewarm`)


def _held(path, hold):
    """(descriptor, size, whether to close it after) for `path`, or None if it cannot be opened."""
    if path in _HELD:
        return _HELD[path] + (False,)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
    except OSError:
        return None
    size = os.fstat(fd).st_size
    if hold and len(_HELD) < _hold_limit():
        _HELD[path] = (fd, size)
        return fd, size, False
    return fd, size, True


@functools.lru_cache(maxsize=None)
def _hold_limit():
    """How many files `prewarm` may keep open: the soft limit on descriptors raised to the hard one, less room."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
        soft = max(soft, want)
    except (ValueError, OSError):
        pass
    return max(0, min(soft - 512, 16384))


def prewarm(files, hold=True):
    """Make every page of `files` resident in the page cache; (files read, seconds) for the caller's note.

    Checked with cachestat (Linux 6.5+: one call per file, without reading it); a file not wholly resident,
    or every file where cachestat is missing, is read through. Read-only: nothing here changes a file. `hold`:
    keep the files open (close-on-exec: no sandbox inherits them) for the next sandbox's check, which is then one
    call per file (the files every sandbox binds are the same ones; a submission's own copy is not held).
    """
    import time
    started = time.monotonic()
    libc = _libc()
    read = 0
    span = (ctypes.c_uint64 * 2)(0, 0)
    out = _Cachestat()
    for path in files:
        held = _held(path, hold)
        if held is None:
            continue
        fd, size, close = held
        try:
            pages = (size + 4095) // 4096
            if libc is not None and _CACHESTAT and libc.syscall(_CACHESTAT, fd, span, ctypes.byref(out), 0) == 0 \
                    and out.cache >= pages:
                continue
            read += 1
            offset = 0
            while offset < size:
                chunk = os.pread(fd, 1 << 20, offset)
                if not chunk:
                    break
                offset += len(chunk)
        except OSError:
            pass
        finally:
            if close:
                os.close(fd)
    return read, time.monotonic() - started


@functools.lru_cache(maxsize=None)
def _libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        libc.syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
        return libc
    except (OSError, AttributeError):
        return None
