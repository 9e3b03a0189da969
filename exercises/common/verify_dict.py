"""The result dict of the verify and sampler exercises (ex01, ex04, ex06): its shape, then its values.

Every one of them returns `{"accepted_tokens": [...], "bonus_token": int or None,
"acceptance_count": int}`; these judges check it with exact types (a token id is
an int: a bool or 2.0 does not count) and say what is wrong without quoting the
expected value, so hidden cases can show the message too:

    >>> judge = verify_judge({"accepted_tokens": [2], "bonus_token": 0, "acceptance_count": 1}, [])
    >>> judge({"results": [{"value": {"accepted_tokens": [2], "bonus_token": 1.0, "acceptance_count": 1}}]})
    (False, 'bonus_token is a float (1.0): token ids must be ints')
"""

from grader.judge import describe, value_judge, with_spec

VERIFY_KEYS = ("accepted_tokens", "bonus_token", "acceptance_count")


def verify_shape(got):
    """What is wrong with a verify-style dict's keys or types, or '' if its shape is right."""
    if type(got) is not dict:
        return f"returned {describe(got)}, expected a dict"
    missing = [k for k in VERIFY_KEYS if k not in got]
    if missing:
        return f"the dict has no key {missing[0]!r}"
    extra = sorted(set(got) - set(VERIFY_KEYS))
    if extra:
        return f"the dict has an unexpected key {extra[0][:40]!r}"
    tokens = got["accepted_tokens"]
    if type(tokens) is not list:
        return f"accepted_tokens is {describe(tokens)}, expected a list of ints"
    for i, t in enumerate(tokens):
        if type(t) is not int:
            return f"accepted_tokens[{i}] is {describe(t)}: token ids must be ints"
    if got["bonus_token"] is not None and type(got["bonus_token"]) is not int:
        return f"bonus_token is {describe(got['bonus_token'])}: token ids must be ints"
    if type(got["acceptance_count"]) is not int:
        return f"acceptance_count is {describe(got['acceptance_count'])}, expected an int"
    if got["acceptance_count"] != len(tokens):
        return "acceptance_count is not len(accepted_tokens)"
    return ""


def verify_judge(expected, calls, names=()):
    """The dict of verify_speculative_tokens (or an exact speculative_sample outcome): shape, then values."""
    def check(got):
        problem = verify_shape(got)
        if problem:
            return False, problem
        wrong = [k for k in VERIFY_KEYS if got[k] != expected[k]]
        return (False, "wrong " + " and ".join(wrong)) if wrong else (True, "")
    return with_spec(value_judge(check, calls, names), "verify", expected=dict(expected), names=list(names))
