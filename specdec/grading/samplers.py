"""Case builders shared by the two sampler exercises: ex04 (the token rule) and ex06 (block verification).

Both take (draft_tokens, draft_probs, target_probs, rng) and return the dict of
`verify_speculative_tokens`, so their exact cases, "same seed, same result"
pairs, shape checks, invalid inputs and batches of seeded calls are built the
same way; only the reference function and the rows differ. Every uniform a
case needs comes from the case's own `random.Random` (`rng` below), so the same
seed always builds the same case.

    >>> from specdec.sampling import speculative_sample
    >>> case = exact("speculative_sample", speculative_sample, "p(x) = 0", 5, [0], [[1.0, 0.0]], [[0.0, 1.0]])
    >>> case.expected, case.shown_input()
    ("{'accepted_tokens': [], 'bonus_token': 1, 'acceptance_count': 0}", 'draft_tokens=[0], draft_probs=[[1.0, 0.0]], target_probs=[[0.0, 1.0]], rng=random.Random(0)')
"""

import random

from . import stats
from .cases import Case, dyadic_row, smooth_row
from .judge import raised_text, raises_judge, value_judge, verify_judge, verify_shape

NAMES = ("draft_tokens", "draft_probs", "target_probs", "rng")


def one_hot(vocab, x):
    return [1.0 if j == x else 0.0 for j in range(vocab)]


def draw(row, u):
    """Index j with P(j) = row[j] / sum(row): walk the running sum past u * sum(row) (the known mistakes' draw)."""
    cut, total = u * sum(row), 0.0
    for j, w in enumerate(row):
        total += w
        if w > 0 and cut < total:
            return j
    return max(j for j, w in enumerate(row) if w > 0)


def exact(func, reference, name, points, tokens, q, p, hidden=True, hint=""):
    """An outcome no random number can change (the reference's, with any seed), or ValueError."""
    calls = ({"args": [tokens, q, p, {"$rng": 0}]},)
    try:
        expected = reference(tokens, q, p, random.Random(0))
    except ValueError:
        return Case(name, points, func, NAMES, calls, raises_judge("ValueError"), hidden, hint, "raises ValueError")
    return Case(name, points, func, NAMES, calls, verify_judge(expected, calls, NAMES), hidden, hint, repr(expected))


def same_seed(func):
    """A kind's make(): 8 pairs of calls with equal rng seeds and different module-level seeds must agree.

    K = 3 smooth rows over 4 tokens, each drafted token the one with the smallest ratio p/q (below 1), so
    that the uniforms matter: with rows where they did not, the pairs would agree whatever generator is used.
    """
    def make(rng, kind):
        q, p = [smooth_row(rng, 4) for _ in range(3)], [smooth_row(rng, 4) for _ in range(4)]
        tokens = [min(range(4), key=lambda j: p[i][j] / q[i][j]) for i in range(3)]
        return _same_seed_case(func, rng, kind, tokens, q, p)
    return make


def _same_seed_case(func, rng, kind, tokens, q, p, pairs=8):
    seeds = [rng.randrange(2 ** 31) for _ in range(pairs)]
    calls = tuple({"args": [tokens, q, p, {"$rng": s}], "globals": rng.randrange(2 ** 31)} for s in seeds for _ in "ab")

    def judge(outcome):
        if "results" not in outcome:
            return False, outcome.get("failure") or "GRADER BUG, not your mistake: " + outcome["worker_error"]
        for i, result in enumerate(outcome["results"]):
            if "value" not in result:
                return False, f"call {i + 1}: " + raised_text(result.get("raised") or result["unconvertible"])
            problem = verify_shape(result["value"])
            if problem:
                return False, f"call {i + 1}: {problem}"
        values = [r["value"] for r in outcome["results"]]
        if any(values[i] != values[i + 1] for i in range(0, len(values), 2)):
            return False, "two calls with random.Random(seed) of the same seed gave different results"
        return True, ""
    return Case(kind.name, kind.points, func, NAMES, calls, judge, True, kind.hint, echo_args=False)


def shape(func):
    """A kind's make(): one seeded call on a random draft (K = 3, 5 tokens) must give a well-formed dict."""
    def make(rng, kind):
        q, p = [smooth_row(rng, 5) for _ in range(3)], [smooth_row(rng, 5) for _ in range(4)]
        tokens = [rng.choices(range(5), weights=row)[0] for row in q]
        return _shape_case(func, rng, kind, tokens, q, p)
    return make


def _shape_case(func, rng, kind, tokens, q, p):
    """A well-formed dict: a prefix of the draft, a replacement token after a rejection, ids in range."""
    calls = ({"args": [tokens, q, p, {"$rng": rng.randrange(2 ** 31)}]},)

    def check(value):
        problem = stats.outputs({"results": [{"value": value}]}, calls, len(p[0]))[1]
        return not problem, problem.replace("call 1 of 1: ", "")
    return Case(kind.name, kind.points, func, NAMES, calls, value_judge(check, calls, NAMES), True, kind.hint)


def batch(rng, k, q, p, n):
    """n calls: x_i ~ q_i drawn here, each call with its own rng seed; the module-level seed on the first."""
    draw = random.Random(rng.randrange(2 ** 31))
    seeds = rng.randrange(2 ** 31)
    calls = [{"args": [[draw.choices(range(len(r)), weights=r)[0] for r in q[:k]], q[:k], p, {"$rng": seeds + i}]}
             for i in range(n)]
    calls[0]["globals"] = seeds
    return tuple(calls)


def invalid(func, reference, which):
    """A kind's make(): K = 2 over two tokens, broken in one way (which: the argument at fault, or "q")."""
    def make(rng, kind):
        q, p = [dyadic_row(rng, 2, positive=[0, 1]) for _ in range(2)], [dyadic_row(rng, 2) for _ in range(3)]
        tokens = [rng.randrange(2), rng.randrange(2)]
        if which == "draft_probs":
            q = q[:1]
        elif which == "target_probs":
            p = p[:1]
        else:
            q[1] = one_hot(2, 1 - tokens[1])
        return exact(func, reference, kind.name, kind.points, tokens, q, p, hint=kind.hint)
    return make
