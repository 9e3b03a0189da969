"""Cases for exercises 2 and 3: the stable softmax and the residual distribution (100 points each).

Values are compared entry by entry within 1e-9 (absolute) of `specdec.softmax`
and `specdec.residual_distribution`, so a correct implementation passes
whatever order it sums in; an error case passes when the call raises ValueError.

    >>> [sum(c.points for c in EXERCISES[e].cases) for e in ("ex02", "ex03")]
    [100, 100]
"""

import math
import random

from ..logits import softmax
from ..residual import residual_distribution
from .cases import Case, Exercise, random_rows as _rows
from .judge import judge_floats

INF = math.inf


# ---- ex02: softmax(logits, temperature) --------------------------------------------------------
def _sm(name, points, logits, t=1.0, hidden=True, hint="", raises=""):
    return Case(name, points, "softmax", (logits, t), ("logits", "temperature"), hidden, raises,
                softmax, judge_floats, hint)


_rng = random.Random(7)
_big = [_rng.uniform(-20, 20) for _ in range(50000)]
EX02 = (
    _sm("[2, 1, 0]", 7, [2.0, 1.0, 0.0], hidden=False),
    _sm("temperature 0.5", 6, [2.0, 1.0, 0.0], 0.5, hidden=False),
    _sm("temperature 2", 6, [2.0, 1.0, 0.0], 2.0, hidden=False),
    _sm("[1000, 999]", 7, [1000.0, 999.0], hidden=False),
    _sm("temperature 0, tie", 5, [1.0, 3.0, 3.0], 0, hidden=False),
    _sm("-inf mask", 6, [0.0, -INF, 0.0], hidden=False),
    _sm("one logit", 5, [5.0], hidden=False),
    _sm("huge logits", 6, [1e6, 1e6 - 1, -1e6], hint="subtract the max before exp()"),
    _sm("very negative logits", 6, [-1000.0, -1001.0, -1002.0], hint="exp(-1000) is 0.0: shift by the max"),
    _sm("integer logits", 4, [1, 2, 3], hint="ints are fine as logits"),
    _sm("temperature 0.01", 5, [1.0, 1.02, 0.5], 0.01, hint="a small temperature: divide after shifting"),
    _sm("temperature 100", 5, [4.0, -3.0, 0.5, 2.0], 100.0, hint="a large temperature flattens"),
    _sm("50000 logits", 6, _big, 0.7, hint="a large vocabulary (seeded)"),
    _sm("log-probabilities back", 4, [math.log(v) for v in (0.65, 0.2, 0.1, 0.05)], hint="softmax(log p) is p"),
    _sm("temperature 0 with -inf", 3, [-INF, 2.0, 2.0], 0, hint="greedy: the first of the tied maxima"),
    _sm("empty logits raises", 3, [], raises="ValueError", hint="empty logits: ValueError"),
    _sm("nan logit raises", 3, [0.0, math.nan], raises="ValueError", hint="a nan logit: ValueError"),
    _sm("+inf logit raises", 3, [0.0, INF], raises="ValueError", hint="a +inf logit: ValueError"),
    _sm("all -inf raises", 3, [-INF, -INF], raises="ValueError", hint="every logit -inf: ValueError"),
    _sm("negative temperature raises", 3, [1.0, 2.0], -1.0, raises="ValueError", hint="temperature < 0"),
    _sm("nan temperature raises", 2, [1.0, 2.0], math.nan, raises="ValueError", hint="temperature nan"),
    _sm("bool temperature raises", 2, [1.0, 2.0], True, raises="ValueError", hint="a bool is not a number here"),
)


# ---- ex03: residual_distribution(p, q) ---------------------------------------------------------
def _res(name, points, p, q, hidden=True, hint="", raises=""):
    return Case(name, points, "residual_distribution", (p, q), ("p", "q"), hidden, raises,
                lambda a, b: residual_distribution(*[x["$tuple"] if isinstance(x, dict) else x for x in (a, b)]),
                judge_floats, hint)


_r10, _r1000 = _rows(31, 10), _rows(32, 1000)
EX03 = (
    _res("example 1", 10, [0.1, 0.6, 0.3], [0.5, 0.2, 0.3], hidden=False),
    _res("example 2", 10, [0.5, 0.3, 0.2], [0.2, 0.2, 0.6], hidden=False),
    _res("p == q: copy of p", 10, [0.5, 0.5], [0.5, 0.5], hidden=False),
    _res("disjoint supports", 10, [0.0, 1.0], [1.0, 0.0], hidden=False),
    _res("length mismatch raises", 10, [0.5, 0.5], [1.0], hidden=False, raises="ValueError"),
    _res("one-token vocabulary", 6, [1.0], [1.0], hint="p == q with one token: fall back to p"),
    _res("p == q, four tokens", 6, [0.4, 0.3, 0.2, 0.1], [0.4, 0.3, 0.2, 0.1], hint="no mass: a copy of p"),
    _res("disjoint, several tokens", 6, [0.0, 0.25, 0.0, 0.75], [0.5, 0.0, 0.5, 0.0], hint="disjoint supports"),
    _res("rounding: no mass", 5, [0.3, 0.7], [0.1 + 0.2, 0.7], hint="differences below zero are clipped to 0"),
    _res("rounding: tiny mass", 5, [0.1 + 0.2, 0.7], [0.3, 0.7], hint="any positive mass is normalized"),
    _res("tuples as input", 6, {"$tuple": [0.2, 0.5, 0.3]}, {"$tuple": [0.4, 0.4, 0.2]},
         hint="p and q may be tuples"),
    _res("seeded, 10 tokens", 6, *_r10, hint="a random case from a fixed seed"),
    _res("seeded, 1000 tokens", 5, *_r1000, hint="a large vocabulary (seeded)"),
    _res("q longer raises", 5, [1.0], [0.5, 0.5], raises="ValueError", hint="lengths differ: ValueError"),
)


EXERCISES = {
    "ex02": Exercise("ex02", "softmax", ("softmax",), EX02),
    "ex03": Exercise("ex03", "residual_distribution", ("residual_distribution",), EX03),
}
