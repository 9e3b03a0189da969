"""Exercise 3's cases: `residual_distribution(p, q)`, what a rejection resamples from (100 points).

Each entry must be within 1e-9 (absolute) of `specdec.residual_distribution`;
a length mismatch must raise ValueError. Public: the statement's five
examples (50 points); hidden (50): one kind per trap, generated from the seed.

    >>> EXERCISE.max_score, sum(c.points for c in EXERCISE.public)
    (100, 50)
"""

from exercises.common.rows import dyadic_row, smooth_row
from exercises.common.twins import checked, padded, permutation, renamed_row
from grader.cases import Case, Exercise, Kind, Mistake
from grader.judge import floats_judge, raises_judge
from specdec.residual import residual_distribution

FUNC, NAMES = "residual_distribution", ("p", "q")


def case(name, points, p, q, hidden=True, hint=""):
    """Expected value: the reference's answer, or ValueError if the reference raises."""
    calls = ({"args": [p, q]},)
    plain = [a["$tuple"] if isinstance(a, dict) else a for a in (p, q)]
    try:
        expected = residual_distribution(*plain)
    except ValueError:
        return Case(name, points, FUNC, NAMES, calls, raises_judge("ValueError"), hidden, hint, "raises ValueError")
    return Case(name, points, FUNC, NAMES, calls, floats_judge(expected, calls, NAMES), hidden, hint, repr(expected))


# ---- the catalogue of known mistakes (trusted, parent only) ------------------------------------------
def wrong_residual(p, q, fallback=True, clip=True, normalize=True, lengths=True):
    """The residual with one switch per known mistake (the defaults are right)."""
    if lengths and len(p) != len(q):
        raise ValueError("lengths differ")
    excess = [max(0.0, a - b) if clip else a - b for a, b in zip(p, q)]
    mass = sum(excess)
    if fallback and mass <= 0.0:
        return [float(a) for a in p]
    return [e / mass for e in excess] if normalize else excess


def _mistake(name, cause, **switch):
    return Mistake(name, cause, {FUNC: lambda p, q: wrong_residual(p, q, **switch)})


MISTAKES = (
    _mistake("no_empty_fallback", "when max(0, p - q) has no mass (p == q) you divide 0 by 0; return a copy "
             "of p instead", fallback=False),
    _mistake("no_clip", "negative differences are kept; the residual is max(0, p - q), clipped at 0", clip=False),
    _mistake("not_normalized", "max(0, p - q) is not divided by its sum", normalize=False),
    _mistake("no_length_check", "p and q of different lengths do not raise ValueError", lengths=False),
)


# ---- kinds of hidden case ----------------------------------------------------------------------------
def _kind(name, points, hint, make, fails=()):
    fails = None if fails is None else frozenset(fails)
    return Kind(name, points, hint, lambda rng, kind: case(kind.name, kind.points, *make(rng), hint=kind.hint),
                fails)


def _same(rng):
    row = dyadic_row(rng, rng.randint(2, 5))
    return row, list(row)


def _disjoint(rng):
    vocab = rng.randint(3, 6)
    support = set(rng.sample(range(vocab), rng.randint(1, vocab - 1)))
    p_part = iter(dyadic_row(rng, len(support), positive=range(len(support))))
    q_part = iter(dyadic_row(rng, vocab - len(support), positive=range(vocab - len(support))))
    return ([next(p_part) if j in support else 0.0 for j in range(vocab)],
            [0.0 if j in support else next(q_part) for j in range(vocab)])


def _rounding(tiny):
    """Rows equal but for one entry: a + b summed in floats in one row, the decimal a + b in the other.

    The float sum is a rounding step above the decimal (as 0.1 + 0.2 > 0.3). In q: p - q is a tiny
    negative there and 0 elsewhere (no mass: a copy of p); in p (`tiny`): a tiny positive (all the mass
    on that token). Drawn from the seed like every hidden case (fixed rows were a table entry valid under
    any --seed: tests/exercises/test_ex03_residual.py).
    """
    def make(rng):
        while True:
            a, b = rng.randrange(1, 50), rng.randrange(1, 50)
            if a / 100 + b / 100 > (a + b) / 100:
                break
        rest = [v * (100 - a - b) / 100 for v in dyadic_row(rng, rng.randint(2, 3))]
        spot = rng.randrange(len(rest) + 1)
        low, high = [rest[:spot] + [v] + rest[spot:] for v in ((a + b) / 100, a / 100 + b / 100)]
        return (high, low) if tiny else (low, high)
    return make


KINDS = (
    _kind("one-token vocabulary", 5, "p == q with one token: fall back to p", lambda rng: ([1.0], [1.0]),
          {"no_empty_fallback"}),
    _kind("p == q, several tokens", 5, "no mass: a copy of p", _same, {"no_empty_fallback"}),
    _kind("disjoint supports", 5, "disjoint supports: the residual is p", _disjoint, ()),
    _kind("partial overlap", 6, "clip at 0, then divide by the sum",
          lambda rng: (dyadic_row(rng, 4), dyadic_row(rng, 4)), {"no_clip", "not_normalized"}),
    _kind("rounding: no mass", 5, "differences below zero are clipped to 0", _rounding(False), {"no_empty_fallback"}),
    _kind("rounding: tiny mass", 5, "any positive mass is normalized", _rounding(True), {"not_normalized"}),
    _kind("tuples as input", 6, "p and q may be tuples",
          lambda rng: ({"$tuple": dyadic_row(rng, 3)}, {"$tuple": dyadic_row(rng, 3)}), None),
    _kind("random rows, 10 tokens", 4, "random rows", lambda rng: (smooth_row(rng, 10), smooth_row(rng, 10)), None),
    _kind("random rows, 1000 tokens", 5, "a large vocabulary",
          lambda rng: (smooth_row(rng, 1000), smooth_row(rng, 1000)), None),
    _kind("q longer raises", 4, "lengths differ: ValueError",
          lambda rng: (lambda n: (dyadic_row(rng, n), dyadic_row(rng, n + 1)))(rng.randint(1, 4)), {"no_length_check"}),
)

PUBLIC = (  # the statement's examples
    case("example 1", 10, [0.1, 0.6, 0.3], [0.5, 0.2, 0.3], hidden=False),
    case("example 2", 10, [0.5, 0.3, 0.2], [0.2, 0.2, 0.6], hidden=False),
    case("p == q: copy of p", 10, [0.5, 0.5], [0.5, 0.5], hidden=False),
    case("example: disjoint supports", 10, [0.0, 1.0], [1.0, 0.0], hidden=False),
    case("length mismatch raises", 10, [0.5, 0.5], [1.0], hidden=False),
)



def _plain(arg):
    return arg["$tuple"] if isinstance(arg, dict) else arg


def _rename(rng, example):
    """An example's twin: p and q moved alike and their token ids renamed alike (`cases.twins`): both mixed with
    one random row r on the tokens both support, p' = (1 - l) p + l r and q' = (1 - l) q + l r, so that p' - q' is
    (1 - l)(p - q): every entry keeps its sign (p == q stays p == q, a zero difference stays zero) while no value
    stays what it was."""
    p, q = (_plain(a) for a in example.calls[0]["args"])
    size = max(len(p), len(q)) + rng.randint(1, 3)  # one to three ids neither row gives mass; one length for both
    both = [j for j in range(len(p)) if len(p) == len(q) and p[j] > 0 and q[j] > 0]   # a bad input: renamed only
    mix = rng.uniform(0.2, 0.6) if both else 0.0
    weights = [rng.random() + 0.1 if j in both else 0.0 for j in range(len(p))]
    r = [w / sum(weights) for w in weights] if both else weights
    p, q = ([(1 - mix) * a + mix * b for a, b in zip(row, r)] if both else row for row in (p, q))
    perm = permutation(rng, size)
    return case(example.name, 0, renamed_row(p, perm, size), renamed_row(q, perm, size))


EXERCISE = Exercise("ex03", "residual_distribution", (FUNC,), PUBLIC, KINDS, MISTAKES, rename=_rename,
                    repair=checked(residual_distribution, lambda args: list(padded(*map(_plain, args)))))
