"""Judges: trusted comparisons, in the parent, on the validated plain data the sandbox sent back.

A judge takes a case's outcome ({"results": [...]} or {"failure": "..."}) and
returns (passed, message). Checks are on exact types: a token id is an int
(a NumPy integer arrives as one; a bool or 2.0 does not count), a probability
an int or a float; `protocol.Foreign` values (objects, huge ints) never pass.
Messages say *what* is wrong without quoting the expected value, so hidden
cases can show them too:

    >>> judge = float_judge(0.5, [])
    >>> judge({"results": [{"value": "0.5"}]})
    (False, "returned a value that is a str ('0.5'), expected a float")
"""

import math
import re

from .protocol import Foreign

def describe(value):
    """Name a plain value the way a learner would: 'a float (1.0)', 'an object of type X'."""
    if isinstance(value, Foreign):
        return str(value)
    if value is None:
        return "None"
    names = {bool: "a bool", int: "an int", float: "a float", str: "a str", list: "a list", dict: "a dict"}
    text = repr(value)
    return f"{names.get(type(value), type(value).__name__)} ({text if len(text) < 40 else text[:37] + '...'})"


def raised_text(info):
    """'raised ValueError: message (line 12: `x = q[i]`)' for an exception the submission raised."""
    text = f"raised {info['type']}: {info['message']}".rstrip(": ")
    if info["type"] == "SystemExit":
        text = f"called sys.exit({info['message']})"
    where = info.get("where") or (f"line {info['line']}" if "line" in info else "")
    if where:
        text += f" ({where}: `{info.get('text', '').strip()}`)"
    return text


def single(outcome):
    """(value, '') for a one-call case that returned, else (None, what went wrong)."""
    if "failure" in outcome:
        return None, outcome["failure"]
    if "worker_error" in outcome:
        return None, ("GRADER BUG, not your mistake (unless your code tampered with the grader's worker): "
                      + outcome["worker_error"].strip().splitlines()[-1])
    result = outcome["results"][0]
    if "raised" in result:
        return None, raised_text(result["raised"])
    if "unconvertible" in result:
        return None, "returned a value the grader could not read: " + raised_text(result["unconvertible"])
    return result["value"], ""


def identical(a, b):
    """Equal values of exactly equal types, recursively (an always-equal object cannot fake it)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(identical(a[k], b[k]) for k in a)
    return a == b


def _sent(arg):
    return arg["$tuple"] if type(arg) is dict and list(arg) == ["$tuple"] else arg


def modified(outcome, calls, names):
    """Names of the arguments the first call changed ('draft_probs'), judged on what came back."""
    result = outcome.get("results", [{}])[0]
    if "args" not in result:
        return []
    sent = [(n, _sent(a)) for n, a in zip(names, calls[0]["args"]) if not (type(a) is dict and "$rng" in a)]
    back = result["args"]
    if type(back) is not list or len(back) != len(sent):
        return [n for n, _ in sent]
    return [n for (n, a), b in zip(sent, back) if not identical(a, b)]


def value_judge(check, calls=(), names=()):
    """A one-call judge: the call must return, leave its inputs alone, and pass `check(value)`."""
    def judge(outcome):
        value, problem = single(outcome)
        if problem:
            return False, problem
        changed = modified(outcome, calls, names)
        if changed:
            return False, "modified its input " + ", ".join(changed) + " (inputs must be left unchanged)"
        passed, message = check(value)
        if not passed and outcome["results"][0].get("tuple"):   # a tuple travels as a list: name what it was
            message = message.replace("returned a list", "returned a tuple", 1)
        return passed, message
    return judge


def with_spec(judge, kind, **data):
    """`judge`, labelled with the plain data it was built from (`spec`): a released checker rebuilds it from that.

    Only judges whose whole knowledge is this data carry one; a judge over a law or a catalogue does not,
    and its case stays with the instructor's grader.
    """
    judge.spec = {"judge": kind, **data}
    return judge


def returns_judge():
    """Every call must return a value, whatever it is (a bad-input case's valid twin: see `cases.twins`)."""
    def judge(outcome):
        if "failure" in outcome:
            return False, outcome["failure"]
        for result in outcome.get("results", []):
            if "raised" in result:
                return False, raised_text(result["raised"])
        return True, ""
    return with_spec(judge, "returns")


ROW_NAME = re.compile(r"\b((?:draft|target)_probs)\[(\d{1,9})\]")


def row_names(message):
    """The rows a message names, as `draft_probs[i]` or `target_probs[i]`, in order, each once.

    >>> row_names("target_probs[1][0] is -0.5; see target_probs[1] and draft_probs[0]")
    ['target_probs[1]', 'draft_probs[0]']
    """
    out = []
    for match in ROW_NAME.finditer(str(message)):
        name = f"{match.group(1)}[{int(match.group(2))}]"
        if name not in out:
            out.append(name)
    return out


def raises_judge(exception, names=None):
    """The call must raise `exception` (or a subclass of it); with `names`, a message that names exactly those
    rows (`row_names`): a message naming every row cannot pass for one that names the row at fault."""
    def judge(outcome):
        if "results" in outcome and "raised" in outcome["results"][0]:
            info = outcome["results"][0]["raised"]
            if exception not in info["builtin_types"]:
                return False, f"expected {exception}, but it {raised_text(info)}"
            if names is not None and row_names(info.get("message", "")) != list(names):
                return False, (f"raised {exception} as it should, but its message must name the row at fault, "
                               "as draft_probs[i] or target_probs[i], and no other row")
            return True, ""
        value, problem = single(outcome)
        return False, problem or f"expected {exception}, but it returned {describe(value)}"
    if names is None:
        return with_spec(judge, "raises", exception=exception)
    return with_spec(judge, "raises", exception=exception, names=list(names))


def _number_problem(got, expected, tol):
    """What is wrong with one returned number, or ''."""
    if type(got) not in (int, float):
        return f"is {describe(got)}, expected a float"
    if not math.isfinite(got):
        return f"is {got}"
    return "" if abs(got - expected) <= tol else f"is off by more than {tol:g}"


def floats_judge(expected, calls, names=(), tol=1e-9):
    """A list of numbers, each within `tol` (absolute) of the reference's."""
    def check(got):
        if type(got) is not list:
            return False, f"returned {describe(got)}, expected a list of floats"
        if len(got) != len(expected):
            return False, f"returned {len(got)} values for {len(expected)} tokens"
        found = map(_number_problem, got, expected, [tol] * len(got))
        problems = (f"entry [{j}] {p}" for j, p in enumerate(found) if p)
        problem = next(problems, "")
        return not problem, problem
    return with_spec(value_judge(check, calls, names), "floats", expected=list(expected), names=list(names), tol=tol)


def float_judge(expected, calls, names=(), tol=1e-9):
    """One number within `tol` (absolute) of the reference's."""
    def check(got):
        problem = _number_problem(got, expected, tol)
        return not problem, "returned a value that " + problem if problem else ""
    return with_spec(value_judge(check, calls, names), "float", expected=expected, names=list(names), tol=tol)
