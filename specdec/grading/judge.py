"""Judges: compare what a submission returned with the reference, strictly, in the parent.

A judge takes (expected, got) and returns (passed, message). `got` is the
plain JSON data the child sent (see `child.to_plain`), so the checks are on
exact types: a token id must be an int (a NumPy integer arrives as one; a
bool or a float such as 2.0 does not count), a probability an int or float.
Messages say *what* is wrong without quoting the expected value, so they
can be shown for hidden cases too:

    >>> judge_verify({"accepted_tokens": [2], "bonus_token": 0, "acceptance_count": 1},
    ...              {"accepted_tokens": [2], "bonus_token": 1.0, "acceptance_count": 1})
    (False, 'bonus_token is a float (1.0): token ids must be ints')
"""

import math

VERIFY_KEYS = ("accepted_tokens", "bonus_token", "acceptance_count")


def describe(value):
    """Name a plain value's type the way a learner would: 'a float (1.0)', 'an object of type X'."""
    if isinstance(value, dict) and set(value) == {"$object"}:
        return f"an object of type {value['$object']}"
    if value is None:
        return "None"
    name = {bool: "a bool", int: "an int", float: "a float", str: "a str", list: "a list", dict: "a dict"}
    text = repr(value)
    return f"{name.get(type(value), type(value).__name__)} ({text if len(text) < 40 else text[:37] + '...'})"


def is_int(value):
    return type(value) is int


def is_number(value):
    return type(value) in (int, float)


def judge_verify(expected, got):
    """The dict of `verify_speculative_tokens` (and `speculative_sample`): keys, types, then values."""
    problem = check_verify_shape(got)
    if problem:
        return False, problem
    wrong = [k for k in VERIFY_KEYS if got[k] != expected[k]]
    if wrong:
        return False, "wrong " + " and ".join(wrong)
    return True, ""


def check_verify_shape(got):
    """Return what is wrong with the result's keys or types, or '' if the shape is right."""
    if type(got) is not dict or set(got) == {"$object"}:
        return f"returned {describe(got)}, expected a dict"
    missing = [k for k in VERIFY_KEYS if k not in got]
    if missing:
        return f"the dict has no key {missing[0]!r}"
    extra = sorted(set(got) - set(VERIFY_KEYS))
    if extra:
        return f"the dict has an unexpected key {extra[0]!r}"
    tokens = got["accepted_tokens"]
    if type(tokens) is not list:
        return f"accepted_tokens is {describe(tokens)}, expected a list of ints"
    for i, t in enumerate(tokens):
        if not is_int(t):
            return f"accepted_tokens[{i}] is {describe(t)}: token ids must be ints"
    if got["bonus_token"] is not None and not is_int(got["bonus_token"]):
        return f"bonus_token is {describe(got['bonus_token'])}: token ids must be ints"
    if not is_int(got["acceptance_count"]):
        return f"acceptance_count is {describe(got['acceptance_count'])}, expected an int"
    if got["acceptance_count"] != len(tokens):
        return "acceptance_count is not len(accepted_tokens)"
    return ""


def judge_floats(expected, got, tol=1e-9):
    """A list of floats, each within `tol` of the reference (absolute)."""
    if type(got) is not list:
        return False, f"returned {describe(got)}, expected a list of floats"
    if len(got) != len(expected):
        return False, f"returned {len(got)} values for {len(expected)} tokens"
    for j, (e, g) in enumerate(zip(expected, got)):
        if not is_number(g):
            return False, f"entry [{j}] is {describe(g)}, expected a float"
        if not abs(g - e) <= tol:  # also catches nan
            return False, f"entry [{j}] is off by more than {tol:g}" if math.isfinite(g) else f"entry [{j}] is {g}"
    return True, ""


def judge_float(expected, got, tol=1e-9):
    """One float within `tol` of the reference (absolute)."""
    if not is_number(got):
        return False, f"returned {describe(got)}, expected a float"
    if not abs(got - expected) <= tol:
        return False, f"off by more than {tol:g}" if math.isfinite(got) else f"returned {got}"
    return True, ""


def judge_same_twice(expected, got):
    """Two runs with equally seeded rngs must give the same, well-shaped, result."""
    if type(got) is not list or len(got) != 2:
        return False, "the driver returned no pair of results"
    for run in got:
        problem = check_verify_shape(run)
        if problem:
            return False, problem
    if got[0] != got[1]:
        return False, "two runs with random.Random(seed) of the same seed gave different results: use the rng argument"
    return True, ""
