"""The worker: the only grader code that runs INSIDE the sandbox, next to the submission.

It is started as a script (`python -s -S -B worker.py REPLY_FD`), sees no course
package, and does four things only: apply the resource limits, leave root if it
was started as root and install a seccomp filter (`harden`), load the submission
from source, and answer requests.
A request names a function and a list of calls; the reply holds, per call, the
returned value as plain JSON data or the exception it raised:

    {"id": 7, "func": "softmax", "calls": [{"args": [[2.0, 1.0], 1.0]}]}
    -> {"id": 7, "results": [{"value": [0.731..., 0.268...]}]}

A batch stops at its first exception (which fails the case anyway).

Nothing here compares, scores or counts: a submission can patch this module
(it shares the process), so every judgment is made by the parent
(`judge.py`, the exercise modules). Frames are `<length>\\n<json>` on stdin
(requests) and on REPLY_FD (replies). Standard library only, by design.
"""

import collections.abc
import importlib.machinery
import json
import os
import random
import sys
import traceback
import types

MAX_FRAME = 64 * 1024 ** 2  # the largest request read
# The largest reply sent: above the parent's own 8 MiB limit, so that limit is reached and tested too.
MAX_SEND = 12 * 1024 ** 2
PLAIN_DEPTH = 32
# An int is sent as a number up to this many bits (3,913 digits): json.dumps refuses one of more than
# 4,300 digits (Python's int-to-str limit), and the worker died of it, reported as a crash (red team 5).
INT_BITS = 13_000
SOURCE = {}  # display name -> the submission's source lines (its file is not on the sandbox's path)


def read_frame(stream):
    """One JSON document from `stream`, or None at end of input."""
    header = stream.readline(32)
    if not header:
        return None
    size = int(header)
    if not 0 <= size <= MAX_FRAME:
        raise ValueError(f"frame of {size} bytes")
    return json.loads(stream.read(size))


def frame(message):
    body = json.dumps(message).encode()
    return str(len(body)).encode() + b"\n" + body


class _TooDeep(Exception):
    pass


def to_plain(value, depth=0):
    """The returned value as JSON data; ints stay ints, bools bools, anything else is named, not trusted.

    A subclass of dict, list, tuple, int, float or str (an OrderedDict, a namedtuple, an IntEnum) is sent as
    the plain value it holds, read through the base type's own methods (dict.items, int.__int__ ...): what it
    overrides (__eq__, items, __iter__) is never called, so nothing it does can reach the parent's judges.
    Another Mapping (a UserDict) is sent as the dict of its items.

    >>> from collections import OrderedDict, namedtuple
    >>> to_plain({"a": (1, 2.5, None, True)}), to_plain(OrderedDict(b=[1])), to_plain(namedtuple("P", "x y")(1, 2))
    ({'a': [1, 2.5, None, True]}, {'b': [1]}, [1, 2])
    >>> deep = []
    >>> for _ in range(40): deep = [deep]
    >>> to_plain(object()), to_plain(deep)
    ({'$object': 'object'}, {'$object': 'a structure nested more than 32 levels'})
    """
    if depth == 0:
        try:
            return to_plain(value, 1)
        except _TooDeep:
            return {"$object": f"a structure nested more than {PLAIN_DEPTH} levels"}
    kind = type(value)
    if kind is not bool and isinstance(value, int):
        value = int.__int__(value)  # an exact int (an IntEnum, an int subclass: its own value)
        if long_int(value):
            return {"$object": long_int(value)}
        return value
    if value is None or kind is bool:
        return value
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if depth > PLAIN_DEPTH:
        raise _TooDeep
    if isinstance(value, dict):
        items = list(dict.items(value))
        if not all(type(k) is str for k, _ in items):
            return {"$object": "dict with keys that are not str"}
        return {k: to_plain(v, depth + 1) for k, v in items}
    if isinstance(value, (list, tuple)):
        return [to_plain(v, depth + 1) for v in (list.__iter__(value) if isinstance(value, list)
                                                  else tuple.__iter__(value))]
    if getattr(kind, "__module__", "") == "numpy":  # NumPy scalars and arrays, converted by NumPy itself
        if kind.__name__ == "ndarray":
            return to_plain(value.tolist(), depth + 1)
        item = value.item()
        if type(item) in (bool, int, float):
            return to_plain(item, depth + 1)  # an object-dtype scalar can hold an int of any size
    if isinstance(value, collections.abc.Mapping):
        items = [(k, v) for k, v in value.items()][:1_000_000]
        if not all(type(k) is str for k, _ in items):
            return {"$object": "dict with keys that are not str"}
        return {k: to_plain(v, depth + 1) for k, v in items}
    return {"$object": kind.__name__}


def long_int(value):
    """The name of an int too long to send or print (over INT_BITS bits), else None; the parent uses it too.

    >>> long_int(10 ** 5000), long_int(10 ** 50)
    ('an int with more than 3913 digits', None)
    """
    return f"an int with more than {int(INT_BITS * 0.30103)} digits" if value.bit_length() > INT_BITS else None


def describe_exception(exc, display):
    """What the parent shows for an exception: type, message, and the submission's line.

    Never raises, and every text is a str: an exception's class can have a `__name__` that is not one (a
    metaclass), a `__str__` that returns a str subclass slicing to anything, a `__module__` whose `==`
    raises. Such an exception once crashed the worker or was reported as a grader bug (red team 5).

    >>> class Meta(type):
    ...     __name__ = property(lambda cls: [1])
    >>> describe_exception(Meta("Odd", (ValueError,), {})("x"), "f.py")["type"]
    '(a name that is not a string)'
    """
    info = {"type": _str(lambda: type(exc).__name__, "(a name that is not a string)", 100),
            "message": _str(lambda: str(exc)[:500], "(str() of the exception failed)", 500)}
    info["builtin_types"] = [_str(lambda: c.__name__, "?", 100) for c in type(exc).__mro__
                             if _str(lambda: c.__module__, "", 20) == "builtins"]
    try:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == display]
        if frames:
            line = frames[-1].lineno
            lines = SOURCE.get(display)
            text = lines[line - 1] if lines and 0 < line <= len(lines) else frames[-1].line
            info.update(line=line, text=(text or "").strip()[:200])
        if isinstance(exc, SyntaxError) and type(exc.filename) is str and exc.filename == display:
            info.update(line=exc.lineno, text=_str(lambda: exc.text.strip(), "", 200))
    except BaseException:  # a traceback or SyntaxError fields the submission forged: no line then
        info.pop("line", None)
        info.pop("text", None)
    if type(info.get("line")) is not int:
        info.pop("line", None)
        info.pop("text", None)
    return info


def _str(get, fallback, limit):
    """get() if it returns an exact str (cut at `limit`), else `fallback`; whatever get() raises."""
    try:
        value = get()
    except BaseException:
        return fallback
    return str.__getitem__(value, slice(limit)) if type(value) is str else fallback


def build_arg(spec):
    """JSON input -> call argument: {"$rng": s} is random.Random(s), {"$tuple": [...]} a tuple."""
    if type(spec) is dict and list(spec) == ["$rng"]:
        return random.Random(spec["$rng"])
    if type(spec) is dict and list(spec) == ["$tuple"]:
        return tuple(spec["$tuple"])
    return spec


def seed_globals(seed):
    """Seed every generator a submission might use instead of its argument: same file, same score."""
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed(seed % 2 ** 32)
        except Exception:  # a broken or patched NumPy is the submission's business
            pass


def run_request(functions, request, display, in_process=False):
    """Call the function once per call spec; return the reply (plain data).

    Subtle: every call's arguments are its own objects (the request was parsed
    from JSON, where each call spells them out), so a call that modifies its
    inputs cannot change another call's.
    """
    fn = functions[request["func"]]
    results = []
    for call in request["calls"]:
        if "globals" in call:
            seed_globals(call["globals"])
        args = [build_arg(a) for a in call["args"]]
        try:
            value = fn(*args)
        except BaseException as exc:  # SystemExit too: the case fails, the run goes on
            if in_process and isinstance(exc, KeyboardInterrupt):
                raise
            results.append({"raised": describe_exception(exc, display)})
            break  # one exception fails the case: the rest of a batch would only cost time
        try:
            entry = {"value": to_plain(value)}
            if isinstance(value, tuple):
                entry["tuple"] = True
            if request.get("echo_args"):
                entry["args"] = [to_plain(a) for a in args if type(a) is not random.Random]
        except BaseException as exc:  # e.g. a NumPy-like object whose conversion raises
            results.append({"unconvertible": describe_exception(exc, display)})
            break
        results.append(entry)
    return {"id": request["id"], "results": results}


def apply_limits(limits):
    import resource
    for name, value in limits.items():
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
        except (ValueError, OSError):  # a lower hard limit is already in place: keep it
            pass


def leave_root(uid):
    """As root inside bwrap: become `uid`, an unprivileged uid no other process has (so the process limit
    counts this sandbox's processes alone). Changing every uid away from 0 clears every capability.

    Subtle: no user namespace of our own here: the capabilities a process gets in a namespace it creates
    would let the submission mount a tmpfs of any size (see `harden`).
    """
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


# Syscalls the sandbox refuses (seccomp), by name; per architecture below. Three classes:
# - what a sandbox must not set up: new namespaces and mounts (a user namespace's capabilities would allow a
#   tmpfs of any size), ptrace, bpf, perf_event_open, userfaultfd, io_uring, process_vm_readv/writev;
# - what holds memory or a kernel resource outside the sandbox's accounts: SysV IPC segments, the kernel
#   keyring, asynchronous I/O contexts (io_setup: one sandbox held all of the host's fs.aio-max-nr, and the
#   host's own io_setup then failed; issue 19);
# - what reads or sets state that a LATER sandbox could observe (issue 19; nothing a sandbox does may be):
#   the kernel keyring (a key stored in one sandbox was there in the next: red team 5,
#   tests/submissions/ex04/hostile_keyring_replay.py); the page cache's residency of the read-only files
#   every sandbox binds (posix_fadvise, readahead, mincore, cachestat, preadv2/pwritev2 with RWF_NOWAIT or
#   RWF_DONTCACHE, madvise MADV_COLD/MADV_PAGEOUT, process_madvise: tests/submissions/ex02/
#   hostile_pagecache_writer.py and _reader.py relayed 64 bits of 64 between two sandboxes); the kernel's global
#   inode counter, which numbers every new pipe, socket, POSIX message queue and memfd (a pipe's st_ino told a
#   sandbox how many the previous one had made: pipe, socket, mq_open, memfd_create) and pidfd's inode (the
#   number of processes created since boot); inotify/fanotify and file locks on the shared files (seen by a
#   sandbox running beside it); the kernel log (syslog) and the global load figures (sysinfo).
# Refused calls fail with EPERM, or with the errno that makes the C library or Python fall back or report
# plainly: ENOSYS for clone3 (its flags are out of reach: libc falls back to clone) and preadv2/pwritev2
# (glibc falls back to preadv/pwritev when no flag is asked for), EAFNOSUPPORT for socket/socketpair.
REFUSED = ("unshare setns mount umount2 pivot_root open_tree move_mount fsopen fsconfig fsmount fspick "
           "mount_setattr shmget semget msgget add_key request_key keyctl io_uring_setup io_uring_enter "
           "io_uring_register userfaultfd perf_event_open bpf ptrace process_vm_readv process_vm_writev "
           "io_setup io_destroy io_submit io_cancel io_getevents io_pgetevents fadvise64 readahead mincore "
           "cachestat process_madvise inotify_init inotify_init1 inotify_add_watch fanotify_init fanotify_mark "
           "flock syslog sysinfo pidfd_open pidfd_getfd memfd_secret").split()
NO_SUCH = ("clone3 preadv2 pwritev2 pipe pipe2 mq_open memfd_create").split()  # ENOSYS
NO_FAMILY = ("socket", "socketpair")  # EAFNOSUPPORT
NUMBERS = {  # from the kernel's tables: arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h
    "x86_64": dict(unshare=272, setns=308, mount=165, umount2=166, pivot_root=155, open_tree=428, move_mount=429,
                   fsopen=430, fsconfig=431, fsmount=432, fspick=433, mount_setattr=442, shmget=29, semget=64,
                   msgget=68, add_key=248, request_key=249, keyctl=250, io_uring_setup=425, io_uring_enter=426,
                   io_uring_register=427, userfaultfd=323, perf_event_open=298, bpf=321, ptrace=101,
                   process_vm_readv=310, process_vm_writev=311, io_setup=206, io_destroy=207, io_submit=209,
                   io_cancel=210, io_getevents=208, io_pgetevents=333, fadvise64=221, readahead=187, mincore=27,
                   cachestat=451, process_madvise=440, inotify_init=253, inotify_init1=294, inotify_add_watch=254,
                   fanotify_init=300, fanotify_mark=301, flock=73, syslog=103, sysinfo=99, pidfd_open=434,
                   pidfd_getfd=438, memfd_secret=447, clone3=435, preadv2=327, pwritev2=328, pipe=22, pipe2=293,
                   mq_open=240, memfd_create=319, socket=41, socketpair=53, clone=56, fcntl=72, madvise=28),
    "aarch64": dict(unshare=97, setns=268, mount=40, umount2=39, pivot_root=41, open_tree=428, move_mount=429,
                    fsopen=430, fsconfig=431, fsmount=432, fspick=433, mount_setattr=442, shmget=194, semget=190,
                    msgget=186, add_key=217, request_key=218, keyctl=219, io_uring_setup=425, io_uring_enter=426,
                    io_uring_register=427, userfaultfd=282, perf_event_open=241, bpf=280, ptrace=117,
                    process_vm_readv=270, process_vm_writev=271, io_setup=0, io_destroy=1, io_submit=2,
                    io_cancel=3, io_getevents=4, io_pgetevents=292, fadvise64=223, readahead=213, mincore=232,
                    cachestat=451, process_madvise=440, inotify_init1=26, inotify_add_watch=27,
                    fanotify_init=262, fanotify_mark=263, flock=32, syslog=116, sysinfo=179, pidfd_open=434,
                    pidfd_getfd=438, memfd_secret=447, clone3=435, preadv2=286, pwritev2=287, pipe2=59,
                    mq_open=180, memfd_create=279, socket=198, socketpair=199, clone=220, fcntl=25, madvise=233),
}  # aarch64 has no inotify_init and no pipe (only their newer forms)
ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
CLONE_NEW = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
CLONE_PIDFD = 0x1000
# fcntl: only these commands (F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC): no record locks
# or leases on the shared files, no F_NOTIFY (dnotify) on their folders, no F_SETOWN signals.
FCNTL_ALLOWED = (0, 1, 2, 3, 4, 1030)
MADVISE_REFUSED = (20, 21)  # MADV_COLD, MADV_PAGEOUT: they evict a file's pages from the shared page cache


def seccomp_program(machine):
    """The classic-BPF filter for `machine` (bytes of struct sock_filter), or None for an unknown one.

    >>> len(seccomp_program("x86_64")) // 8, seccomp_program("sparc")
    (144, None)
    """
    if machine not in NUMBERS:
        return None
    import struct
    nr = NUMBERS[machine]
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, eperm = 0x7FFF0000, 0x00050000 | 1
    errno_of = {**{n: eperm for n in REFUSED}, **{n: 0x00050000 | 38 for n in NO_SUCH},
                **{n: 0x00050000 | 97 for n in NO_FAMILY}}
    code = [(ld, 0, 0, 4), (jeq, 1, 0, ARCH[machine]), (ret, 0, 0, eperm),   # another ABI (i386 int 0x80): refused
            (ld, 0, 0, 0), (jge, 0, 1, 0x40000000), (ret, 0, 0, eperm)]  # x32 syscall numbers: refused
    for name, action in errno_of.items():
        if name in nr:
            code += [(jeq, 0, 1, nr[name]), (ret, 0, 0, action)]

    def argument(name, index, tests):
        """Syscall `name`: load the low 32 bits of argument `index`, then `tests` (ending in returns)."""
        return [(jeq, 0, len(tests) + 1, nr[name]), (ld, 0, 0, 16 + 8 * index)] + tests

    def one_of(values, then, otherwise):
        m = len(values)
        return [(jeq, m - k, 0, v) for k, v in enumerate(values)] + [(ret, 0, 0, otherwise), (ret, 0, 0, then)]
    code += argument("clone", 0, [(jset, 0, 1, CLONE_NEW | CLONE_PIDFD), (ret, 0, 0, eperm), (ret, 0, 0, allow)])
    code += argument("fcntl", 1, one_of(FCNTL_ALLOWED, allow, eperm))
    code += argument("madvise", 2, one_of(MADVISE_REFUSED, eperm, allow))
    code += [(ret, 0, 0, allow)]
    return b"".join(struct.pack("=HBBI", c, jt, jf, k) for c, jt, jf, k in code)


def harden():
    """No new privileges, then the seccomp filter (for this process and all it starts); True if installed."""
    import ctypes
    import struct
    if not sys.platform.startswith("linux"):  # process mode elsewhere: nothing to install
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    libc.prctl(38, 1, None, 0, 0)  # PR_SET_NO_NEW_PRIVS
    program = seccomp_program(os.uname().machine) if struct.calcsize("P") == 8 else None
    if program is None:
        return False

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
    fprog = Fprog(len(program) // 8, program)
    return libc.prctl(22, 2, ctypes.cast(ctypes.pointer(fprog), ctypes.c_void_p), 0, 0) == 0  # SECCOMP_MODE_FILTER


class NumpyAbsent(ModuleNotFoundError):
    """NumPy is not available in this run (the plain-Python run): its import, or a use of its stand-in."""


class _Absent:
    """NumPy's stand-in for a top-level statement of the plain-Python run that asked for NumPy.

    Every use gives another stand-in (np.linspace(0, 1)[::2] * 3); asking one for a truth value, a number, a
    length or its items raises NumpyAbsent. A plot cell's `x = np.linspace(...)` then binds x and the cell goes
    on; a graded call that computes with it fails, and the file is graded again with NumPy (no bonus).
    """

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def __repr__(self):
        return f"<{object.__getattribute__(self, '_name')}: NumPy is not available in this run>"

    def _absent(self, *args, **kwargs):
        raise NumpyAbsent(f"NumPy is not available in this run (the plain-Python run): {self!r}")

    def _more(self, *args, **kwargs):
        return _Absent(object.__getattribute__(self, "_name") + "(...)")

    def __getattr__(self, attr):
        return _Absent(f"{object.__getattribute__(self, '_name')}.{attr}")

    def __format__(self, spec):
        return repr(self)

    def __setattr__(self, attr, value):
        pass

    def __setitem__(self, key, value):
        pass

    __bool__ = __len__ = __iter__ = __int__ = __float__ = __index__ = __complex__ = __contains__ = _absent
    __hash__ = object.__hash__
    __call__ = __getitem__ = __neg__ = __pos__ = __abs__ = __invert__ = _more
    for _op in ("add sub mul matmul truediv floordiv mod pow lshift rshift and xor or lt le eq ne gt ge "
                "radd rsub rmul rmatmul rtruediv rfloordiv rmod rpow rand rxor ror").split():
        locals()[f"__{_op}__"] = _more
    del _op


class _Plot:
    """matplotlib's stand-in, in every run: a plot is never graded. Every use gives another stand-in."""
    PAIRS = ("get_xlim", "get_ylim", "xlim", "ylim", "get_legend_handles_labels", "subplot_mosaic", "margins")

    def __init__(self, name="matplotlib"):
        object.__setattr__(self, "_name", name)

    def __repr__(self):
        return f"<{object.__getattribute__(self, '_name')} (the grader's stand-in for matplotlib)>"

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        name = f"{object.__getattribute__(self, '_name')}.{attr}"
        if attr == "subplots":
            return lambda nrows=1, ncols=1, *a, **k: (_Plot(name + ":figure"), _grid(name, nrows, ncols, k))
        if attr in self.PAIRS:
            return lambda *a, **k: (_Plot(name), _Plot(name))
        if attr == "hist":
            return lambda *a, **k: (_Plot(name), _Plot(name), _Plot(name))
        return _Plot(name)

    def __call__(self, *args, **kwargs):
        return _Plot(object.__getattribute__(self, "_name") + "(...)")

    def __getitem__(self, key):
        return _Plot(object.__getattribute__(self, "_name") + "[...]")

    def __iter__(self):  # `line, = ax.plot(x, y)`
        return iter((_Plot(object.__getattribute__(self, "_name") + "[0]"),))

    def __setattr__(self, attr, value):
        pass

    def __setitem__(self, key, value):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __bool__(self):
        return True

    def __len__(self):
        return 1


class _Grid(list):
    """The axes of plt.subplots(n, m): a list (of rows) that also takes [i, j], .flat, .ravel() and .flatten()."""

    def __getitem__(self, key):
        if type(key) is tuple:
            value = self
            for k in key:
                value = list.__getitem__(value, k) if isinstance(value, list) else value
            return value
        return list.__getitem__(self, key)

    @property
    def flat(self):
        return [a for row in self for a in (row if isinstance(row, list) else [row])]

    def ravel(self):
        return self.flat

    flatten = ravel

    def __getattr__(self, attr):
        return _Plot(attr)


def _grid(name, nrows, ncols, kwargs):
    if type(nrows) is not int or type(ncols) is not int or not 0 < nrows * ncols <= 10_000:
        return _Plot(name + ":axes")
    if nrows == ncols == 1 and kwargs.get("squeeze", True):
        return _Plot(name + ":axes")
    if (nrows == 1 or ncols == 1) and kwargs.get("squeeze", True):
        return _Grid(_Plot(name + ":axes") for _ in range(nrows * ncols))
    return _Grid(_Grid(_Plot(name + ":axes") for _ in range(ncols)) for _ in range(nrows))


class _StandIns:
    """Meta-path finder: matplotlib (any run) is the grader's stand-in; NumPy is noted, and in `block` mode refused.

    The note only decides whether the parent grades a second time with NumPy available (never the bonus): a
    submission that hides it only loses that run. In `block` mode (the plain-Python run) an import of NumPy
    raises NumpyAbsent; a top-level statement that fails for that reason is skipped (see `load`).
    """

    def __init__(self, block):
        self.block, self.wanted = block, False

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top == "numpy":
            self.wanted = True
            if self.block:
                raise NumpyAbsent("NumPy is not available in this run (the plain-Python run)")
        if top == "matplotlib":
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__getattr__ = lambda attr, _n=spec.name: getattr(_Plot(_n), attr)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def _numpy_caused(exc):
    """True if `exc`, or an exception it was raised from or during, is NumPy's absence."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, NumpyAbsent):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _bound_names(node):
    """The names a top-level statement binds (assignment and loop targets, imports, def, class, with ... as)."""
    import ast
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in sub.names if a.name != "*")
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is node:
            names.add(sub.name)
    return names


def _future_flags():
    import __future__
    flags = 0
    for name in __future__.all_feature_names:
        flags |= getattr(__future__, name).compiler_flag
    return flags


FUTURE_FLAGS = _future_flags()   # what a `from __future__ import ...` leaves in force for what is compiled after it
TOP_LEVEL_AWAIT = 0x2000          # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT (a notebook cell may `await`)
CO_COROUTINE = 0x0080


def _run_async(coroutine):
    """Run a cell's top-level `await` to its end, as IPython does, on an event loop of its own.

    Subtle: asyncio's loop makes a socket pair to wake itself, which the sandbox refuses (worker.REFUSED): this
    loop has none (nothing here wakes it from another thread)."""
    import asyncio

    class Loop(asyncio.SelectorEventLoop):
        def _make_self_pipe(self):
            pass

        def _close_self_pipe(self):
            pass

        def _write_to_self(self):
            pass
    loop = Loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def _run_code(code, namespace):
    value = eval(code, namespace)
    return _run_async(value) if code.co_flags & CO_COROUTINE else value


def _execute(nodes, display, namespace, flags, tolerant):
    """Run top-level statements in `namespace`; return the future flags in force after them.

    `tolerant` (the plain-Python run): statement by statement, and one that fails because NumPy is absent is
    skipped; the names it would have bound become NumPy stand-ins (`_Absent`), so that what comes after it (a
    plot cell's next line) runs on. Any other exception is raised, as Jupyter would show it.
    """
    import ast
    for group in ([n] for n in nodes) if tolerant else [nodes]:
        code = compile(ast.Module(body=group, type_ignores=[]), display, "exec", flags=flags | TOP_LEVEL_AWAIT,
                       dont_inherit=True)
        flags |= code.co_flags & FUTURE_FLAGS
        try:
            _run_code(code, namespace)
        except Exception as exc:
            if not tolerant or not _numpy_caused(exc):
                raise
            for name in _bound_names(group[0]):
                if name not in namespace or isinstance(namespace[name], _Absent) or name in ("np", "numpy"):
                    namespace[name] = _Absent(name)
    return flags


def _shown(namespace, count, value):
    """What IPython's display hook keeps of a cell's last expression: _, __, ___, Out[n] and _n."""
    if value is None:
        return
    namespace["___"], namespace["__"], namespace["_"] = namespace.get("__", ""), namespace.get("_", ""), value
    namespace["Out"][count] = namespace[f"_{count}"] = value


def run_notebook(text, display, namespace, cells, tolerant=False):
    """Run a notebook's script as Jupyter's Run All runs it, in `namespace`; return {} or where it stopped.

    `text` is the script (`notebook.notebook_to_script`), `cells` its code cells as (cell number, first line,
    last line). The lines before the first cell (the grader's stand-ins for IPython) run first. Then each cell
    is compiled on its own, as IPython compiles it: a `from __future__ import` at the top of a cell holds for
    the cells after it, a top-level `await` runs, a cell's last expression sets `_`, `__`, `___`, `Out[n]` and
    `_n` (not with a trailing `;`), `In`, `_i`, `_ii`, `_iii` and `_in` hold the cells' code. The first cell that
    raises stops the run, as Run All stops there: what the cells above it defined is what gets graded, and the
    return value says where it stopped: {"stopped_at": cell number, "error": describe_exception(...)}.
    """
    import ast
    lines = text.split("\n")
    head = "\n".join(lines[:cells[0][1] - 1]) if cells else text
    exec(compile(head, display, "exec", dont_inherit=True), namespace)
    namespace.update(In=[""], Out={}, _="", __="", ___="", _i="", _ii="", _iii="")
    namespace["_ih"], namespace["_oh"] = namespace["In"], namespace["Out"]
    flags = 0
    for count, (number, first, last) in enumerate(cells or (), start=1):
        source = "\n".join(lines[first - 1:last])
        namespace["In"].append(source)
        namespace["_iii"], namespace["_ii"], namespace["_i"] = namespace["_ii"], namespace["_i"], source
        namespace[f"_i{count}"] = source
        try:
            tree = compile(source + "\n", display, "exec", ast.PyCF_ONLY_AST | flags | TOP_LEVEL_AWAIT,
                           dont_inherit=True)
            ast.increment_lineno(tree, first - 1)
            body = tree.body
            last_expr = body[-1] if body and isinstance(body[-1], ast.Expr) and \
                not source.rstrip().endswith(";") else None
            flags = _execute(body[:-1] if last_expr else body, display, namespace, flags, tolerant)
            if last_expr is not None:
                code = compile(ast.Expression(body=last_expr.value), display, "eval", flags=flags | TOP_LEVEL_AWAIT,
                               dont_inherit=True)
                try:
                    _shown(namespace, count, _run_code(code, namespace))
                except Exception as exc:
                    if not tolerant or not _numpy_caused(exc):
                        raise
        except BaseException as exc:   # Run All stops at the first cell that raises, SystemExit included
            if isinstance(exc, SyntaxError) and exc.lineno is not None and exc.filename == display:
                exc.lineno += first - 1   # the cell was compiled from its own first line
            return {"stopped_at": number, "error": describe_exception(exc, display)}
    return {}


def load(config, tolerant=False):
    """Compile the submission from its source (never from a .pyc) and run its module code; (module, notes).

    The grader writes the copy in UTF-8 (a .py file is decoded in the encoding it declares, PEP 263, first), so
    the source is compiled as text: a `# coding: latin-1` line it still holds is then only a comment.
    `tolerant`: the plain-Python run's top level (`_execute`). A notebook (`config["cells"]`) runs as Jupyter's
    Run All runs it (`run_notebook`); notes say where its run stopped, if it did.
    """
    import ast
    with open(config["path"], "rb") as f:
        source = f.read()
    text = source.decode("utf-8", errors="replace")  # lines as Python counts them (not str.splitlines)
    SOURCE[config["display"]] = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    module = types.ModuleType("submission")
    module.__file__ = config["display"]
    sys.modules["submission"] = module
    if config.get("cells") is not None:
        return module, run_notebook(text, config["display"], module.__dict__, config["cells"], tolerant)
    code = compile(text, config["display"], "exec", dont_inherit=True)   # a SyntaxError, as Python reports it
    if tolerant:
        _execute(ast.parse(text, config["display"]).body, config["display"], module.__dict__, 0, True)
    else:
        exec(code, module.__dict__)
    return module, {}


def _interpreter_builtins():
    """help, exit, quit, copyright, credits and license, as the `site` module gives them to an interpreter that
    loads it (the worker runs with -S: no site-packages, so `site` itself was never run); stdin is /dev/null, so
    `input()` raises EOFError at once instead of reading the grader's requests."""
    import site
    for setup in (site.setquit, site.setcopyright, site.sethelper):
        try:
            setup()
        except Exception:  # a stripped-down interpreter: the names stay missing, as they would be
            pass


def main(argv):
    reply_fd = int(argv[1])
    stdin = os.fdopen(os.dup(0), "rb")   # the requests; fd 0 becomes /dev/null for the submission's input()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, "r", closefd=False)
    write = os.write  # held before the submission can patch os

    def send(message):
        data = frame(message)
        if len(data) > MAX_SEND:
            data = frame({"id": message.get("id"), "too_large": len(data)})
        while data:
            data = data[write(reply_fd, data):]

    config = read_frame(stdin)
    sys.path[:] = config["sys_path"] + [p for p in sys.path[1:] if p]  # drop the script's own directory
    apply_limits(config["limits"])
    if config.get("uid"):
        import ctypes  # noqa: F401  (harden's, loaded while still root: the interpreter's files may be root's alone)
        import struct  # noqa: F401
        leave_root(config["uid"])
    harden()
    _interpreter_builtins()
    watch = _StandIns(config.get("block_numpy", False))
    sys.meta_path.insert(0, watch)
    display = config["display"]
    try:
        module, notes = load(config, tolerant=watch.block)
        missing = [n for n in config["functions"] if not callable(getattr(module, n, None))]
    except BaseException as exc:
        send({"event": "load_error", "error": describe_exception(exc, display), "numpy_wanted": watch.wanted})
        os._exit(0)
    if missing:
        send({"event": "load_error", "error": {"type": "missing", "message": missing[0]}, "notes": notes,
              "numpy_wanted": watch.wanted})
        os._exit(0)
    functions = {n: getattr(module, n) for n in config["functions"]}
    send({"event": "loaded", "numpy_wanted": watch.wanted, "notes": notes})
    while True:
        request = read_frame(stdin)
        if request is None:
            os._exit(0)  # skip atexit handlers and threads the submission left behind
        try:
            reply = run_request(functions, request, display)
        except BaseException:
            reply = {"id": request.get("id"), "worker_error": traceback.format_exc(limit=-3)[-1500:]}
        reply["numpy_wanted"] = watch.wanted
        send(reply)


if __name__ == "__main__":
    main(sys.argv)
