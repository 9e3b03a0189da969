"""Cases for exercise 5: acceptance rate and expected tokens per target call (100 points).

Both functions are compared within 1e-9 (absolute) with `specdec.theory`;
error cases must raise the exception the statement names.

    >>> sum(c.points for c in EXERCISES["ex05"].cases)
    100
"""

import math

from ..theory import acceptance_rate, expected_tokens_per_step
from .cases import Case, Exercise, random_rows as _rows
from .judge import judge_float


# ---- ex05: acceptance_rate(p, q), expected_tokens_per_step(alpha, gamma) ------------------------
def _ar(name, points, p, q, hidden=True, hint="", raises=""):
    return Case(name, points, "acceptance_rate", (p, q), ("p", "q"), hidden, raises, acceptance_rate,
                judge_float, hint)


def _et(name, points, alpha, gamma, hidden=True, hint="", raises=""):
    return Case(name, points, "expected_tokens_per_step", (alpha, gamma), ("alpha", "gamma"), hidden, raises,
                expected_tokens_per_step, judge_float, hint)


EX05 = (
    _ar("beta: example 1", 8, [0.1, 0.6, 0.3], [0.5, 0.2, 0.3], hidden=False),
    _ar("beta: the problem's distribution", 8, [0.65, 0.2, 0.1, 0.05], [0.4, 0.4, 0.1, 0.1], hidden=False),
    _ar("beta: disjoint supports", 8, [1.0, 0.0], [0.0, 1.0], hidden=False),
    _ar("beta: p == q", 5, [0.2, 0.3, 0.5], [0.2, 0.3, 0.5], hint="p == q: always accepted"),
    _ar("beta: one token", 4, [1.0], [1.0], hint="a one-token vocabulary"),
    _ar("beta: seeded, 20 tokens", 5, *_rows(51, 20), hint="a random case from a fixed seed"),
    _ar("beta: seeded, 1000 tokens", 4, *_rows(52, 1000), hint="a large vocabulary: math.fsum helps"),
    _ar("beta: length mismatch raises", 4, [0.5, 0.5], [1.0], raises="ValueError", hint="q longer or shorter"),
    _ar("beta: not a distribution raises", 4, [0.5, 0.5], [1.0, 1.0], raises="ValueError",
        hint="rows must sum to 1"),
    _et("E[tokens]: alpha 0.5, gamma 2", 5, 0.5, 2, hidden=False),
    _et("E[tokens]: alpha 0.8, gamma 4", 5, 0.8, 4, hidden=False),
    _et("E[tokens]: alpha 1", 5, 1.0, 4, hidden=False),
    _et("E[tokens]: alpha 0", 5, 0.0, 3, hidden=False),
    _et("E[tokens]: gamma 0", 5, 0.6, 0, hidden=False),
    _et("E[tokens]: alpha just below 1", 5, 0.9999, 5, hint="close to 1 the sum is close to gamma + 1"),
    _et("E[tokens]: gamma 1000", 4, 0.9, 1000, hint="a large gamma"),
    _et("E[tokens]: alpha 1, gamma 0", 3, 1.0, 0, hint="0/0 at alpha = 1"),
    _et("E[tokens]: alpha > 1 raises", 4, 1.5, 2, raises="ValueError", hint="alpha outside [0, 1]"),
    _et("E[tokens]: gamma < 0 raises", 4, 0.5, -1, raises="ValueError", hint="gamma < 0"),
    _et("E[tokens]: gamma 2.0 raises", 3, 0.5, 2.0, raises="TypeError", hint="gamma must be an int"),
    _et("E[tokens]: alpha nan raises", 2, math.nan, 2, raises="ValueError", hint="alpha nan"),
)

EXERCISES = {
    "ex05": Exercise("ex05", "acceptance_rate, expected_tokens_per_step",
                     ("acceptance_rate", "expected_tokens_per_step"), EX05),
}
