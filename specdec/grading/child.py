"""The grader's child process: load one submission, run cases, report plain data.

The parent (`runner.py`) starts this file as a script, `python -I child.py FD JOB`,
in a fresh temporary directory. JOB is a JSON file holding only the cases'
*inputs*; expected values never leave the parent. Each result goes back as
one JSON line on file descriptor FD, never on stdout, so whatever the
submission prints cannot mix in:

    {"event": "case", "index": 3, "outcome": "returned", "value": [0.5, 0.5], "mutated": []}

Inside the child: a 2 GiB address-space limit, `import specdec` blocked (a
submission cannot call the reference), and every attempt to import NumPy
reported at once (the plain-Python bonus is decided at run time, not by
reading the source). `run_case` is also what `check()` runs in a notebook.
"""

import copy
import json
import os
import random
import sys

MEMORY_LIMIT = 2 * 1024 ** 3
MAX_MESSAGE = 16 * 1024 ** 2   # a result bigger than this is refused, not sent
BLOCKED = ("specdec", "exercises")


def to_plain(value, depth=0):
    """Copy a result into exact JSON types: dict, list, str, int, float, bool, None.

    Integers come through `operator.index` (NumPy integers pass, 2.0 stays a
    float); arrays and tuples become lists. Anything else becomes an
    {"$object": type name} marker, so a value whose __eq__ always says True
    reaches the parent as what it is.

    >>> to_plain({"a": (1, 2.5, None, True)})
    {'a': [1, 2.5, None, True]}
    """
    if depth > 40:
        return {"$object": "structure nested more than 40 levels"}
    kind = type(value)
    if value is None or kind is bool or kind.__name__ == "bool_":
        return None if value is None else bool(value)
    if isinstance(value, float):
        return float.__float__(value) if kind is not float else value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, dict):
        if not all(type(k) is str for k in value):
            return {"$object": f"{kind.__name__} with non-str keys"}
        return {str(k): to_plain(v, depth + 1) for k, v in dict.items(value)}
    if isinstance(value, (list, tuple)) or kind.__name__ == "ndarray":
        if kind.__name__ == "ndarray":
            items = value.tolist()
            if not isinstance(items, list):  # a 0-d array holds one number
                return to_plain(items, depth + 1)
        else:
            items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        return [to_plain(v, depth + 1) for v in items]
    if kind.__name__ in ("float16", "float32", "float64", "longdouble"):
        return float(value)
    if hasattr(kind, "__index__"):
        import operator
        return int.__int__(operator.index(value))
    return {"$object": kind.__name__}


def _same(a, b):
    """Structural equality that also compares types, so an always-equal object cannot fake it."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def _build_args(spec):
    """Turn JSON inputs into call arguments: {"$rng": seed} is a random.Random, {"$tuple": [...]} a tuple."""
    if isinstance(spec, dict) and set(spec) == {"$rng"}:
        return random.Random(spec["$rng"])
    if isinstance(spec, dict) and set(spec) == {"$tuple"}:
        return tuple(spec["$tuple"])
    return spec


def _sample(fn, params):
    """Driver for ex04's statistical cases: draw x ~ q, verify, count what comes out.

    Returns counts of the first emitted token (an accepted draft or the
    correction), counts of the bonus token after a full acceptance, and the
    total number of accepted drafts, over `n` calls.
    """
    q, p, k, n = params["q"], params["p"], params["k"], params["n"]
    draft_rng, rng = random.Random(params["draft_seed"]), random.Random(params["seed"])
    first, bonus = [0] * len(p[0]), [0] * len(p[0])
    accepted_total = 0
    for _ in range(n):
        drafts = [draft_rng.choices(range(len(q[i])), weights=q[i])[0] for i in range(k)]
        out = fn(drafts, [list(r) for r in q[:k]], [list(r) for r in p], rng)
        if not isinstance(out, dict) or any(key not in out for key in ("accepted_tokens", "bonus_token",
                                                                       "acceptance_count")):
            raise TypeError(f"the sampler returned {type(out).__name__}, not the dict of three keys")
        emitted = list(out["accepted_tokens"]) + [out["bonus_token"]]
        if not all(type(t) is int and 0 <= t < len(first) for t in emitted[:1] + emitted[k:k + 1] if t is not None):
            raise ValueError(f"the sampler emitted {emitted!r}: token ids must be ints in [0, {len(first)})")
        first[emitted[0]] += 1
        if out["acceptance_count"] == k and out["bonus_token"] is not None:
            bonus[out["bonus_token"]] += 1
        accepted_total += out["acceptance_count"]
    return {"first": first, "bonus": bonus, "accepted_total": accepted_total}


def _same_seed_twice(fn, params):
    """Driver: two calls with random.Random(seed) of one seed; a sampler using its rng agrees."""
    return [fn(*[copy.deepcopy(a) for a in params["args"]], random.Random(params["seed"])) for _ in range(2)]


DRIVERS = {"sample": _sample, "same_seed_twice": _same_seed_twice}


def run_case(functions, case):
    """Run one case; return the message the parent judges (plain data only).

    The inputs are deep-copied before the call and compared after it: a
    function that changes its arguments is reported by argument name.
    """
    fn = functions[case["func"]]
    try:
        if case.get("driver", "call") != "call":
            value = DRIVERS[case["driver"]](fn, case["params"])
            return {"outcome": "returned", "value": to_plain(value), "mutated": []}
        args = [_build_args(a) for a in case["args"]]
        before = copy.deepcopy(case["args"])
        value = fn(*args)
        mutated = [name for name, a, b in zip(case["arg_names"], case["args"], before) if not _same(a, b)]
        return {"outcome": "returned", "value": to_plain(value), "mutated": mutated}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the case fails, the run goes on
        if isinstance(exc, KeyboardInterrupt) and case.get("in_process"):
            raise
        builtin = [c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins"]
        try:
            text = str(exc)[:300]
        except BaseException:
            text = "(str() of the exception failed)"
        return {"outcome": "raised", "type": type(exc).__name__, "builtin_types": builtin, "message": text}


class _Guard:
    """Meta-path finder: refuses `import specdec`, reports the first NumPy import."""

    def __init__(self, send):
        self.send = send
        self.numpy = False

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in BLOCKED:
            raise ImportError(f"the grader blocks `import {name}`: write the function yourself")
        if top == "numpy" and not self.numpy:
            self.numpy = True
            self.send({"event": "numpy"})
        return None


def _hide_course_package():
    """Make `specdec` unfindable, not just refused: removing `_Guard` from sys.meta_path must not be enough.

    Drops setuptools' editable-install finders and every sys.path entry that holds a
    specdec/ or exercises/ package. What is left, reading the files from disk, is the
    same-user limit the README states.
    """
    editable = lambda f: str(getattr(f, "__module__", "")).startswith("__editable__")
    sys.meta_path[:] = [f for f in sys.meta_path if not editable(f)]
    sys.path_hooks[:] = [h for h in sys.path_hooks if not editable(h)]
    sys.path[:] = [p for p in sys.path
                   if not any(os.path.exists(os.path.join(p or ".", pkg, "__init__.py")) for pkg in BLOCKED)]
    sys.path_importer_cache.clear()


def main(argv):
    fd, job_path = int(argv[1]), argv[2]
    import resource
    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ValueError, OSError):  # a lower hard limit is already in place: keep it
        pass
    with open(job_path) as f:
        job = json.load(f)
    write, dumps = os.write, json.dumps  # held before the submission can patch them

    def send(message):
        data = (dumps(message) + "\n").encode()
        if len(data) > MAX_MESSAGE:
            data = (dumps({"event": "case", "index": message.get("index"), "outcome": "too_large",
                           "size": len(data)}) + "\n").encode()
        while data:
            data = data[write(fd, data):]

    _hide_course_package()
    guard = _Guard(send)
    sys.meta_path.insert(0, guard)
    numpy_loaded = lambda: guard.numpy or any(m == "numpy" or m.startswith("numpy.") for m in sys.modules)
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location("submission", job["path"])
        module = importlib.util.module_from_spec(spec)
        sys.modules["submission"] = module
        spec.loader.exec_module(module)
    except BaseException as exc:
        line = getattr(exc, "lineno", None)
        where = f" (line {line})" if isinstance(exc, SyntaxError) and line else ""
        text = f"{type(exc).__name__}{where}: {str(exc)[:300]}"
        if isinstance(exc, SystemExit):
            text = f"called sys.exit({exc.code!r}) while loading"
        send({"event": "load_error", "message": text})
        os._exit(0)
    for name in job["functions"]:
        if not callable(getattr(module, name, None)):
            send({"event": "load_error", "message": f"the submission defines no function {name}()"})
            os._exit(0)
    functions = {name: getattr(module, name) for name in job["functions"]}
    send({"event": "loaded", "numpy": numpy_loaded()})
    for case in job["cases"]:
        message = run_case(functions, case)
        message.update(event="case", index=case["index"], numpy=numpy_loaded())
        send(message)
    send({"event": "done"})
    # Wait to be killed: the parent reads this process's memory map (NumPy loaded?) before it does.
    # os._exit skips atexit handlers and threads the submission may have left behind.
    import time
    time.sleep(30)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
