"""Exercise 1's cases: `verify_speculative_tokens`, 100 points (+10 for plain Python).

Public: the seed problem's three examples. Hidden: a hand-made case per edge
the seed's rule decides (rejection at step 0, stopping at the first rejection,
u == p/q on exactly representable floats where `<=` matters, argmax ties,
K = 0, a missing or extra bonus row, the residual's argmax rather than the
target's, length mismatches that must raise ValueError), a 5000-token
vocabulary, and five cases drawn from a fixed seed.

    >>> sum(c.points for c in CASES), sum(c.points for c in CASES if not c.hidden)
    (100, 25)
"""

import random

from ..verify import verify_speculative_tokens
from .cases import Case, Exercise
from .judge import judge_verify

NAMES = ("draft_tokens", "draft_probs", "target_probs", "random_samples")


def _case(name, points, tokens, q, p, u, hidden=True, hint="", raises=""):
    return Case(name, points, "verify_speculative_tokens", (tokens, q, p, u), NAMES, hidden, raises,
                verify_speculative_tokens, judge_verify, hint)


def _row(rng, vocab):
    weights = [rng.random() ** 2 + 1e-3 for _ in range(vocab)]
    total = sum(weights)
    return [w / total for w in weights]


def _seeded(seed, k, vocab, bonus_row):
    """K drafted tokens drawn from q, uniform u; all from one fixed seed."""
    rng = random.Random(seed)
    q = [_row(rng, vocab) for _ in range(k)]
    p = [_row(rng, vocab) for _ in range(k + bonus_row)]
    tokens = [rng.choices(range(vocab), weights=row)[0] for row in q]
    u = [rng.random() for _ in range(k)]
    return tokens, q, p, u


RULE = "accept while u_i <= min(1, p_i(x)/q_i(x))"
CASES = (
    # Public: the seed's examples, verbatim.
    _case("seed 1: all accepted, bonus", 10, [2, 1], [[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]],
          [[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], [0.5, 0.4], hidden=False),
    _case("seed 2: both accepted, no row K", 10, [0, 1], [[0.8, 0.2], [0.9, 0.1]],
          [[0.9, 0.1], [0.1, 0.9]], [0.5, 0.8], hidden=False),
    _case("seed 3: length mismatch", 5, [0], [[0.5, 0.5]], [[0.5, 0.5]], [0.1, 0.2],
          hidden=False, raises="ValueError"),
    # Hidden, hand-made: each names the edge it pins down.
    _case("reject at step 0", 4, [0, 1], [[0.8, 0.2], [0.5, 0.5]], [[0.2, 0.8], [0.5, 0.5], [0.3, 0.7]],
          [0.5, 0.1], hint="a rejection at the first step: nothing accepted, the correction is the bonus"),
    _case("stop at the first rejection", 5, [1, 0, 2], [[0.2, 0.5, 0.3], [0.6, 0.2, 0.2], [0.3, 0.3, 0.4]],
          [[0.1, 0.6, 0.3], [0.3, 0.3, 0.4], [0.2, 0.2, 0.6], [0.5, 0.25, 0.25]], [0.9, 0.7, 0.1],
          hint="after a rejection, later draft tokens are not verified, even if they would pass"),
    _case("u == p/q is accepted", 5, [0], [[0.5, 0.5]], [[0.25, 0.75], [0.625, 0.375]], [0.5],
          hint=f"u equal to the ratio (exact floats): {RULE}, with <="),
    _case("u == p/q at step 1", 3, [1, 0], [[0.25, 0.75], [0.5, 0.5]], [[0.5, 0.5], [0.375, 0.625]],
          [0.1, 0.75], hint=f"u equal to the ratio at the second step: {RULE}, with <="),
    _case("ratio above 1 always accepts", 3, [2], [[0.3, 0.3, 0.4]], [[0.1, 0.1, 0.8], [0.2, 0.5, 0.3]],
          [0.99], hint="min(1, p/q) is 1 when p(x) > q(x)"),
    _case("p(x) = 0 rejects", 3, [0], [[0.6, 0.4]], [[0.0, 1.0]], [0.3],
          hint="a token the target gives probability 0 is rejected for any u > 0"),
    _case("u = 0 accepts even p(x) = 0", 2, [0], [[0.6, 0.4]], [[0.0, 1.0], [0.5, 0.5]], [0.0],
          hint="the rule is u <= min(1, p/q): 0 <= 0 holds"),
    _case("correction: residual, not target", 5, [0], [[0.5, 0.05, 0.45]], [[0.1, 0.3, 0.6]], [0.5],
          hint="on rejection take the argmax of normalize(max(0, p - q)), not of p"),
    _case("residual tie -> lower index", 4, [0], [[0.5, 0.25, 0.25]], [[0.0, 0.5, 0.5]], [0.4],
          hint="argmax ties go to the lower token index"),
    _case("bonus tie -> lower index", 4, [0], [[0.5, 0.25, 0.25]], [[0.5, 0.25, 0.25], [0.25, 0.375, 0.375]],
          [0.7], hint="argmax ties go to the lower token index"),
    _case("K = 0 with a bonus row", 3, [], [], [[0.2, 0.5, 0.3]], [],
          hint="an empty draft: nothing to verify, but target_probs has row K = 0"),
    _case("K = 0, no rows", 3, [], [], [], [], hint="an empty draft and no target rows"),
    _case("all accepted, no row K", 4, [0, 1, 0], [[0.5, 0.5]] * 3, [[0.6, 0.4], [0.3, 0.7], [0.9, 0.1]],
          [0.2, 0.3, 0.1], hint="no bonus token unless target_probs has a row K"),
    _case("rows past K + 1 unused", 3, [1], [[0.5, 0.5]], [[0.4, 0.6], [0.7, 0.3], [0.1, 0.9], [0.2, 0.8]],
          [0.3], hint="the bonus comes from row K, the one right after the draft"),
    _case("5000-token vocabulary", 5, *_seeded(2024, 4, 5000, 1), hint="a large vocabulary (seeded)"),
    *[_case(f"seeded case {i}", 2, *_seeded(100 + i, k, v, b), hint="a random case from a fixed seed")
      for i, (k, v, b) in enumerate([(1, 2, 1), (3, 4, 1), (5, 3, 0), (4, 6, 1), (2, 5, 0)], start=1)],
    _case("len(draft_probs) != K raises", 3, [0, 1], [[0.5, 0.5]], [[0.5, 0.5]] * 3, [0.1, 0.2],
          raises="ValueError", hint="one draft row per drafted token, else ValueError"),
    _case("len(random_samples) < K raises", 3, [0, 1], [[0.5, 0.5]] * 2, [[0.5, 0.5]] * 3, [0.1],
          raises="ValueError", hint="one uniform sample per drafted token, else ValueError"),
    _case("len(target_probs) < K raises", 3, [0, 1], [[0.5, 0.5]] * 2, [[0.5, 0.5]], [0.1, 0.2],
          raises="ValueError", hint="the target must score every drafted position, else ValueError"),
)

EXERCISES = {"ex01": Exercise("ex01", "verify_speculative_tokens", ("verify_speculative_tokens",), CASES, bonus=10)}
