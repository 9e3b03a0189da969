"""Exercise 2's cases: `softmax(logits, temperature)`, stable, with temperature (100 points).

Values are compared entry by entry within 1e-9 (absolute) of `specdec.softmax`,
so a correct stable softmax passes whatever order it sums in; an error case
passes when the call raises ValueError. Public: the statement's seven
examples (42 points); hidden (58): one kind per trap, generated from the seed.

    >>> EXERCISE.max_score, sum(c.points for c in EXERCISE.public)
    (100, 42)
"""

import math

from exercises.common.twins import checked, permutation, renamed_row
from grader.cases import Case, Exercise, Kind, Mistake
from grader.judge import floats_judge, raises_judge
from specdec.logits import softmax

FUNC, NAMES, INF = "softmax", ("logits", "temperature"), math.inf


def case(name, points, logits, t=1.0, hidden=True, hint=""):
    """Expected value: the reference's answer, or ValueError if the reference raises."""
    calls = ({"args": [logits, t]},)
    try:
        expected = softmax(list(logits), t)
    except ValueError:
        return Case(name, points, FUNC, NAMES, calls, raises_judge("ValueError"), hidden, hint, "raises ValueError")
    return Case(name, points, FUNC, NAMES, calls, floats_judge(expected, calls, NAMES), hidden, hint, repr(expected))


# ---- the catalogue of known mistakes (trusted, parent only) ------------------------------------------
def wrong_softmax(logits, temperature=1.0, shift=True, scale="divide", ties="first", greedy=True, validate=True,
                  infinite=False):
    """softmax with one switch per known mistake (the defaults are right)."""
    z = [float(v) for v in logits]
    top_temperature = math.nan if infinite else INF   # infinite: an infinite temperature passes the check
    if validate and (not z or any(v != v or v == INF for v in z) or max(z) == -INF
                     or type(temperature) is bool or not 0 <= temperature
                     or temperature != temperature or temperature == top_temperature):
        raise ValueError("bad input")
    if greedy and temperature == 0:
        top = max(z)
        best = z.index(top) if ties == "first" else len(z) - 1 - z[::-1].index(top)
        return [1.0 if j == best else 0.0 for j in range(len(z))]
    top = max(z) if shift else 0.0
    weights = [math.exp((v - top) / temperature if scale == "divide" else (v - top) * temperature) for v in z]
    total = sum(weights)
    return [w / total for w in weights]


def _mistake(name, cause, **switch):
    return Mistake(name, cause, {FUNC: lambda z, t=1.0: wrong_softmax(z, t, **switch)})


MISTAKES = (
    _mistake("no_max_shift", "exp() of the raw logits overflows or underflows; subtract max(logits) first",
             shift=False),
    _mistake("temperature_multiplied", "the logits are multiplied by the temperature; divide them by it",
             scale="multiply"),
    _mistake("greedy_last_tie", "at temperature 0 a tie goes to the last largest logit; it goes to the first",
             ties="last"),
    _mistake("greedy_missing", "temperature 0 is not handled; it is the greedy limit (all mass on the first "
             "largest logit)", greedy=False),
    _mistake("no_validation", "bad inputs (empty, nan or +inf logits, all -inf, a negative, nan or bool "
             "temperature) do not raise ValueError", validate=False),
    _mistake("infinite_temperature", "an infinite temperature is not refused (it gives uniform probabilities); the "
             "statement lists it among the errors: raise ValueError", infinite=True),
)


# ---- kinds of hidden case ----------------------------------------------------------------------------
def _kind(name, points, hint, make, fails=()):
    fails = None if fails is None else frozenset(fails)
    return Kind(name, points, hint, lambda rng, kind: case(kind.name, kind.points, *make(rng), hint=kind.hint),
                fails)


def _logits(rng, n, low=-5.0, high=5.0):
    return [round(rng.uniform(low, high), 3) for _ in range(n)]


def _bad_logit(value):
    def make(rng):
        z = _logits(rng, rng.randint(2, 5))
        z[rng.randrange(len(z))] = value
        return z, 1.0
    return make


def _tied_greedy(rng):
    z = _logits(rng, rng.randint(3, 6))
    i, j = sorted(rng.sample(range(len(z)), 2))
    z[i] = z[j] = max(z) + 1.0
    return z, 0


KINDS = (
    _kind("huge logits", 5, "exp() of a logit near 1000 overflows: shift by the max",
          lambda rng: ([v + 1000.0 for v in _logits(rng, rng.randint(2, 6))], 1.0), {"no_max_shift"}),
    _kind("very negative logits", 5, "exp(-1000) is 0.0: shift by the max",
          lambda rng: ([v - 1000.0 for v in _logits(rng, rng.randint(2, 6))], 1.0), {"no_max_shift"}),
    _kind("integer logits", 3, "ints are fine as logits", lambda rng: ([rng.randint(-4, 4) for _ in range(4)], 1.0),
          ()),
    _kind("temperature below 1", 5, "softmax(z / T): divide by the temperature",
          lambda rng: (_logits(rng, 4), round(rng.uniform(0.2, 0.7), 2)), {"temperature_multiplied"}),
    _kind("temperature above 1", 5, "a large temperature flattens",
          lambda rng: (_logits(rng, 4), round(rng.uniform(2.0, 50.0), 1)), {"temperature_multiplied"}),
    _kind("50000 logits", 4, "a large vocabulary", lambda rng: (_logits(rng, 50000, -20, 20), 0.7), None),
    _kind("log-probabilities back", 3, "softmax(log p) is p", lambda rng: (
        [math.log(w / 10) for w in (lambda c: [c[0], c[1] - c[0], 10 - c[1]])(sorted(rng.sample(range(1, 10), 2)))],
        1.0), ()),
    _kind("temperature 0, tied maxima", 3, "greedy: the first of the tied maxima", _tied_greedy,
          {"greedy_last_tie", "greedy_missing"}),
    _kind("temperature 0, one maximum", 3, "temperature 0 is the greedy limit: one-hot on the largest logit",
          lambda rng: (_logits(rng, rng.randint(2, 6)) + [-INF], 0), {"greedy_missing"}),
    _kind("empty logits raises", 3, "empty logits: ValueError", lambda rng: ([], rng.choice([0.5, 1.0, 2.0])), ()),
    _kind("nan logit raises", 3, "a nan logit: ValueError", _bad_logit(math.nan), {"no_validation"}),
    _kind("+inf logit raises", 3, "a +inf logit: ValueError", _bad_logit(INF), {"no_validation"}),
    _kind("all -inf raises", 3, "every logit -inf: ValueError", lambda rng: ([-INF] * rng.randint(1, 4), 1.0),
          {"no_validation"}),
    _kind("negative temperature raises", 3, "temperature < 0: ValueError",
          lambda rng: (_logits(rng, 3), -round(rng.uniform(0.1, 3.0), 2)), {"no_validation"}),
    _kind("nan temperature raises", 2, "temperature nan: ValueError", lambda rng: (_logits(rng, 3), math.nan),
          {"no_validation"}),
    _kind("infinite temperature raises", 3, "temperature inf: ValueError (the limit would be uniform, but the "
          "statement refuses it)", lambda rng: (_logits(rng, rng.randint(2, 5)), INF),
          {"no_validation", "infinite_temperature"}),
    _kind("bool temperature raises", 2, "a bool is not a number here", lambda rng: (_logits(rng, 3), True),
          {"no_validation"}),
)

PUBLIC = (  # the statement's examples
    case("[2, 1, 0]", 7, [2.0, 1.0, 0.0], hidden=False),
    case("temperature 0.5", 6, [2.0, 1.0, 0.0], 0.5, hidden=False),
    case("temperature 2", 6, [2.0, 1.0, 0.0], 2.0, hidden=False),
    case("[1000, 999]", 7, [1000.0, 999.0], hidden=False),
    case("temperature 0, tie", 5, [1.0, 3.0, 3.0], 0, hidden=False),
    case("-inf mask", 6, [0.0, -INF, 0.0], hidden=False),
    case("one logit", 5, [5.0], hidden=False),
)



def _rename(rng, example):
    """An example's twin: the logits moved (each finite one by N(0, 0.3), tied maxima kept tied and on top), put in
    another order and all shifted by one constant (softmax's own symmetry: softmax(z + c) = softmax(z)), so that no
    table holds every twin and none can be mapped back to its example (`cases.twins`)."""
    logits, t = example.calls[0]["args"]
    finite = [v for v in logits if math.isfinite(v)]
    top = max(finite) if finite else None
    moved = [v if not math.isfinite(v) else v + rng.gauss(0.0, 0.3) for v in logits]
    if t == 0 and top is not None:   # temperature 0: which logits are the largest is the question
        moved = [top if v == top else min(m, top - 0.1) if math.isfinite(v) else m for v, m in zip(logits, moved)]
    shift = rng.randrange(-64, 65) / 8
    return case(example.name, 0, [v + shift for v in renamed_row(moved, permutation(rng, len(moved)))], t)


def _repair(args):
    """A bad input without its fault: non-finite logits -> 0.0, no logits -> [0.0], a bad temperature -> 1."""
    logits, t = args
    z = [v if type(v) in (int, float) and math.isfinite(v) else 0.0 for v in logits] or [0.0]
    ok = type(t) in (int, float) and math.isfinite(t) and t >= 0
    return [z, t if ok else 1.0]


EXERCISE = Exercise("ex02", "softmax", (FUNC,), PUBLIC, KINDS, MISTAKES, rename=_rename,
                    repair=checked(softmax, _repair))
