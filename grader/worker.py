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

import json
import os
import random
import sys
import traceback

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

    >>> to_plain({"a": (1, 2.5, None, True)})
    {'a': [1, 2.5, None, True]}
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
    if kind is int and long_int(value):
        return {"$object": long_int(value)}
    if value is None or kind in (bool, int, float, str):
        return value
    if depth > PLAIN_DEPTH:
        raise _TooDeep
    if kind is dict:
        if not all(type(k) is str for k in value):
            return {"$object": "dict with keys that are not str"}
        return {k: to_plain(v, depth + 1) for k, v in value.items()}
    if kind in (list, tuple):
        return [to_plain(v, depth + 1) for v in value]
    if getattr(kind, "__module__", "") == "numpy":  # NumPy scalars and arrays, converted by NumPy itself
        if kind.__name__ == "ndarray":
            return to_plain(value.tolist(), depth + 1)
        item = value.item()
        if type(item) in (bool, int, float):
            return to_plain(item, depth + 1)  # an object-dtype scalar can hold an int of any size
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


# Syscalls the sandbox refuses (seccomp), per architecture: (audit arch, clone, clone3, refused with EPERM).
# Refused: new namespaces and mounts (a user namespace's capabilities would allow a tmpfs of any size);
# SysV IPC segments, which hold memory that no process's address-space limit counts; the kernel keyring
# (add_key, request_key, keyctl), which no namespace of ours separates: a key stored in one sandbox was
# there in the next one of the same uid, so a file carried its answers into its replay (red team 5,
# tests/submissions/ex04/hostile_keyring_replay.py); and kernel interfaces no grading needs that widen
# what a submission can reach (io_uring, userfaultfd, perf_event_open, bpf, ptrace, process_vm_readv/writev).
SYSCALLS = {
    "x86_64": (0xC000003E, 56, 435, (272, 308, 165, 166, 155, 29, 64, 68) + tuple(range(428, 434)) + (442,)
               + (248, 249, 250) + (425, 426, 427, 323, 298, 321, 101, 310, 311)),
    "aarch64": (0xC00000B7, 220, 435, (97, 268, 40, 39, 41, 194, 190, 186) + tuple(range(428, 434)) + (442,)
                + (217, 218, 219) + (425, 426, 427, 282, 241, 280, 117, 270, 271)),
}  # unshare, setns, mount, umount2, pivot_root, shmget, semget, msgget, open_tree .. fspick, mount_setattr;
# add_key, request_key, keyctl; io_uring_setup, _enter, _register, userfaultfd, perf_event_open, bpf, ptrace,
# process_vm_readv, process_vm_writev
CLONE_NEW = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET


def seccomp_program(machine):
    """The classic-BPF filter for `machine` (bytes of struct sock_filter), or None for an unknown one.

    >>> len(seccomp_program("x86_64")) // 8, seccomp_program("sparc")
    (67, None)
    """
    if machine not in SYSCALLS:
        return None
    import struct
    arch, clone, clone3, refused = SYSCALLS[machine]
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    code = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, eperm),   # another ABI (i386 int 0x80): refused
            (ld, 0, 0, 0), (jge, 0, 1, 0x40000000), (ret, 0, 0, eperm)]  # x32 syscall numbers: refused
    for nr in refused:
        code += [(jeq, 0, 1, nr), (ret, 0, 0, eperm)]
    code += [(jeq, 0, 1, clone3), (ret, 0, 0, enosys),   # its flags are out of reach: libc falls back to clone
             (jeq, 0, 3, clone), (ld, 0, 0, 16), (jset, 0, 1, CLONE_NEW), (ret, 0, 0, eperm), (ret, 0, 0, allow)]
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


class _NumpyWatch:
    """Meta-path finder: notes that the submission asked for NumPy; in `block` mode refuses it.

    The note only decides whether the parent grades a second time with NumPy
    available (never the bonus): a submission that hides it only loses that run.
    """

    def __init__(self, block):
        self.block, self.wanted = block, False

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "numpy":
            self.wanted = True
            if self.block:
                raise ImportError("NumPy is not available in this run (the plain-Python run)")
        return None


def load(config):
    """Compile the submission from its source (never from a .pyc) and run its module code."""
    import types
    with open(config["path"], "rb") as f:
        source = f.read()
    text = source.decode("utf-8", errors="replace")  # lines as Python counts them (not str.splitlines)
    SOURCE[config["display"]] = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    module = types.ModuleType("submission")
    module.__file__ = config["display"]
    sys.modules["submission"] = module
    exec(compile(source, config["display"], "exec", dont_inherit=True), module.__dict__)
    return module


def main(argv):
    reply_fd = int(argv[1])
    stdin = os.fdopen(0, "rb")
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
        leave_root(config["uid"])
    harden()
    watch = _NumpyWatch(config.get("block_numpy", False))
    sys.meta_path.insert(0, watch)
    display = config["display"]
    try:
        module = load(config)
        missing = [n for n in config["functions"] if not callable(getattr(module, n, None))]
    except BaseException as exc:
        send({"event": "load_error", "error": describe_exception(exc, display), "numpy_wanted": watch.wanted})
        os._exit(0)
    if missing:
        send({"event": "load_error", "error": {"type": "missing", "message": missing[0]}})
        os._exit(0)
    functions = {n: getattr(module, n) for n in config["functions"]}
    send({"event": "loaded", "numpy_wanted": watch.wanted})
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
