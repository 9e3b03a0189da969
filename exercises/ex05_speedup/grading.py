"""Exercise 5's cases: `acceptance_rate(p, q)` and `expected_tokens_per_step(alpha, gamma)` (100 points).

Both are compared within 1e-9 (absolute) with `specdec.theory`; an error case
must raise the exception the statement names. Public: the statement's eight
examples (49 points); hidden (51): one kind per trap, generated from the seed.

    >>> EXERCISE.max_score, sum(c.points for c in EXERCISE.public)
    (100, 49)
"""

import math

from exercises.common.rows import dyadic_row, smooth_row
from exercises.common.twins import checked, normalised, padded, permutation, perturbed_row, renamed_row
from grader.cases import Case, Exercise, Kind, Mistake
from grader.judge import float_judge, raises_judge
from specdec.theory import acceptance_rate, expected_tokens_per_step

AR, ET = "acceptance_rate", "expected_tokens_per_step"
NAMES = {AR: ("p", "q"), ET: ("alpha", "gamma")}
REFERENCE = {AR: acceptance_rate, ET: expected_tokens_per_step}


def case(name, points, func, args, hidden=True, hint=""):
    """Expected value: the reference's answer, or the exception the reference raises."""
    calls = ({"args": list(args)},)
    try:
        expected = REFERENCE[func](*args)
    except (ValueError, TypeError) as exc:
        error = type(exc).__name__
        return Case(name, points, func, NAMES[func], calls, raises_judge(error), hidden, hint, f"raises {error}")
    judge = float_judge(expected, calls, NAMES[func])
    return Case(name, points, func, NAMES[func], calls, judge, hidden, hint, repr(expected))


# ---- the catalogue of known mistakes (trusted, parent only) ------------------------------------------
def _rate(p, q, formula):
    if len(p) != len(q) or any(abs(math.fsum(r) - 1.0) > 1e-4 for r in (p, q)):
        raise ValueError("not two distributions over one vocabulary")
    tv = 0.5 * math.fsum(abs(a - b) for a, b in zip(p, q))
    return {"tv": tv, "no_half": 1.0 - 2.0 * tv, "product": math.fsum(a * b for a, b in zip(p, q))}[formula]


def _tokens(alpha, gamma, formula):
    if type(alpha) is bool or type(gamma) is not int:
        raise TypeError("alpha must be a number and gamma an int")
    if not 0.0 <= alpha <= 1.0 or gamma < 0:
        raise ValueError("alpha outside [0, 1] or gamma < 0")
    if formula == "infinite":
        return 1.0 / (1.0 - alpha)
    if formula == "no_bonus":
        return float(gamma) if alpha == 1.0 else (1.0 - alpha ** gamma) / (1.0 - alpha)
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)  # formula "closed": 0/0 at alpha = 1


def _mistake(name, cause, func, wrong):
    return Mistake(name, cause, dict(REFERENCE, **{func: wrong}))


MISTAKES = (
    _mistake("rate_is_tv", "acceptance_rate returns the total variation TV(p, q); beta = 1 - TV = "
             "sum min(p, q)", AR, lambda p, q: _rate(p, q, "tv")),
    _mistake("rate_no_half", "acceptance_rate uses 1 - sum |p - q|; TV has a factor 1/2: beta = 1 - (1/2) "
             "sum |p - q|", AR, lambda p, q: _rate(p, q, "no_half")),
    _mistake("rate_product", "acceptance_rate sums p(x) q(x); beta sums min(p(x), q(x))", AR,
             lambda p, q: _rate(p, q, "product")),
    _mistake("tokens_no_bonus", "expected_tokens_per_step misses the bonus token: the sum runs "
             "1 + alpha + ... + alpha^gamma (gamma + 1 terms)", ET, lambda a, g: _tokens(a, g, "no_bonus")),
    _mistake("tokens_infinite_gamma", "expected_tokens_per_step ignores gamma: 1 / (1 - alpha) is the limit "
             "of an endless draft", ET, lambda a, g: _tokens(a, g, "infinite")),
    _mistake("tokens_alpha_1", "expected_tokens_per_step divides 0 by 0 at alpha = 1; the sum is gamma + 1 "
             "there", ET, lambda a, g: _tokens(a, g, "closed")),
)


# ---- kinds of hidden case ----------------------------------------------------------------------------
def _kind(name, points, hint, func, make, fails=()):
    fails = None if fails is None else frozenset(fails)
    return Kind(name, points, hint, lambda rng, kind: case(kind.name, kind.points, func, make(rng), hint=kind.hint),
                fails)


def _same(rng):
    row = dyadic_row(rng, rng.randint(2, 5))
    return row, list(row)


KINDS = (
    _kind("beta: p == q", 5, "p == q: always accepted", AR, _same, {"rate_is_tv", "rate_product"}),
    _kind("beta: one token", 4, "a one-token vocabulary", AR, lambda rng: ([1.0], [1.0]), {"rate_is_tv"}),
    _kind("beta: random rows, 20 tokens", 5, "random rows", AR, lambda rng: (smooth_row(rng, 20), smooth_row(rng, 20)),
          None),
    _kind("beta: random rows, 1000 tokens", 4, "a large vocabulary: math.fsum helps", AR,
          lambda rng: (smooth_row(rng, 1000), smooth_row(rng, 1000)), None),
    # The two bad-input cases are the 20-token case's twins but for their fault: when they alone had rows of
    # k/32 (unequal), raising on such rows took their 8 points with no check (red team 4).
    _kind("beta: length mismatch raises", 4, "q longer or shorter than p: ValueError", AR,
          lambda rng: (smooth_row(rng, 20), smooth_row(rng, 20 + rng.choice([-1, 1]))), ()),
    _kind("beta: not a distribution raises", 4, "rows must sum to 1: ValueError", AR,
          lambda rng: (smooth_row(rng, 20), [v * 2 for v in smooth_row(rng, 20)]), ()),
    _kind("E[tokens]: alpha just below 1", 4, "close to 1 the sum is close to gamma + 1", ET,
          lambda rng: (1.0 - rng.randint(1, 9) * 1e-5, rng.randint(3, 8)),
          {"tokens_no_bonus", "tokens_infinite_gamma"}),
    # alpha^gamma < 1e-10 but alpha^(gamma+1) / (1 - alpha) > 1e-9: only the endless-draft formula is off.
    _kind("E[tokens]: large gamma", 4, "a large gamma: the draft still ends", ET, lambda rng: (lambda a: (
        a, int(math.log(1e-10) / math.log(a)) + rng.randint(1, 20)))(round(rng.uniform(0.985, 0.995), 3)),
        {"tokens_infinite_gamma"}),
    # alpha^4 in [4e-9, 2e-8] but alpha^5 / (1 - alpha) < 3e-10: only the missing last term is off.
    _kind("E[tokens]: small alpha", 3, "a small alpha: the last term alpha^gamma still counts", ET,
          lambda rng: (round(rng.uniform(0.008, 0.012), 4), 4), {"tokens_no_bonus"}),
    _kind("E[tokens]: alpha 1, gamma 0", 3, "0/0 at alpha = 1: the sum has gamma + 1 terms", ET,
          lambda rng: (1.0, 0), {"tokens_no_bonus", "tokens_infinite_gamma", "tokens_alpha_1"}),
    _kind("E[tokens]: alpha > 1 raises", 4, "alpha outside [0, 1]: ValueError", ET,
          lambda rng: (round(rng.uniform(1.01, 3.0), 2), rng.randint(1, 5)), ()),
    _kind("E[tokens]: gamma < 0 raises", 3, "gamma < 0: ValueError", ET,
          lambda rng: (round(rng.uniform(0.1, 0.9), 2), -rng.randint(1, 5)), ()),
    _kind("E[tokens]: gamma 2.0 raises", 2, "gamma must be an int: TypeError", ET,
          lambda rng: (round(rng.uniform(0.1, 0.9), 2), float(rng.randint(1, 5))), ()),
    _kind("E[tokens]: alpha nan raises", 2, "alpha nan: ValueError", ET, lambda rng: (math.nan, rng.randint(1, 5)), ()),
)

PUBLIC = (  # the statement's examples
    case("beta: example 1", 8, AR, ([0.1, 0.6, 0.3], [0.5, 0.2, 0.3]), hidden=False),
    case("beta: the graded problem's distribution", 8, AR, ([0.65, 0.2, 0.1, 0.05], [0.4, 0.4, 0.1, 0.1]),
         hidden=False),
    case("beta: disjoint supports", 8, AR, ([1.0, 0.0], [0.0, 1.0]), hidden=False),
    case("E[tokens]: alpha 0.5, gamma 2", 5, ET, (0.5, 2), hidden=False),
    case("E[tokens]: alpha 0.8, gamma 4", 5, ET, (0.8, 4), hidden=False),
    case("E[tokens]: alpha 1", 5, ET, (1.0, 4), hidden=False),
    case("E[tokens]: alpha 0", 5, ET, (0.0, 3), hidden=False),
    case("E[tokens]: gamma 0", 5, ET, (0.6, 0), hidden=False),
)



def _rename(rng, example):
    """An example's twin: for beta, p and q with their values moved on their supports (`twins.perturbed_row`) and
    renamed alike; for E[tokens], a neighbouring input of the same edge."""
    a, b = example.calls[0]["args"]
    if example.func == AR:
        size = len(a) + rng.randint(1, 3)          # and one to three ids neither row gives mass
        perm = permutation(rng, size)
        a, b = perturbed_row(rng, a), perturbed_row(rng, b)
        return case(example.name, 0, AR, (renamed_row(a, perm, size), renamed_row(b, perm, size)))
    if a in (0.0, 1.0):
        return case(example.name, 0, ET, (a, b + rng.randint(1, 40)))
    return case(example.name, 0, ET, (a * rng.uniform(0.9, 0.99), b))


def _repair(args):
    """A bad input without its fault: rows padded to one length and normalised; alpha into [0, 1], gamma an int."""
    a, b = args
    if isinstance(a, list):
        return [normalised(r) for r in padded(a, b)]
    alpha = a if type(a) in (int, float) and 0 <= a <= 1 else 0.5
    gamma = abs(int(b)) if type(b) in (int, float) and math.isfinite(b) else 2
    return [alpha, gamma]


def _reference(a, b):
    return REFERENCE[AR if isinstance(a, list) else ET](a, b)


EXERCISE = Exercise("ex05", "acceptance_rate, expected_tokens_per_step", (AR, ET), PUBLIC, KINDS, MISTAKES,
                    rename=_rename, repair=checked(_reference, _repair))
