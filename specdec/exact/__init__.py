"""Exact enumeration for multi-token rules: what a rule emits, as exact fractions, on toy models.

A toy model is a function from a prefix (a tuple of ids) to a row of probabilities,
ideally `fractions.Fraction`s; `toy_model` makes random ones whose rows depend on
the prefix. For a target p, a draft q and a draft length gamma:

    target_distribution(p, n)                the target's own first n tokens
    step_outcomes(p, q, gamma, rule)         one verification step: {(n kept, emitted block): probability}
    expected_accepted(p, q, gamma, rule)     E[n kept] in one step
    emitted_distribution(p, q, n, gamma, rule)  the first n tokens of speculative generation, step after step
    multi_draft_distribution(p, q, k)        one position verified against k candidates
    total_variation(a, b)                    1/2 sum |a - b| over two such dicts (or two rows)

Every drafted token is drawn from q (a greedy draft is a q that puts 1 on its argmax).
Rules: "token", "block", "tree" (width children per node, drawn from q i.i.d. or, by
default, without replacement; naive=True verifies distinct siblings against q itself),
"greedy", "typical" (eps, delta), and two known mistakes to measure: "token-no-stop"
(keeps verifying after a rejection, with rows scored for the rejected prefix) and
"block-per-token" (block verification's last-pass rule with the token rule's test
and residual, as vllm-ascend#7807). The token and block rules take switches, one per
catalogued mistake or shipped bug (`steps.VARIANTS`): the exercises' graders build the
laws of their wrong rules from these, never from a second enumerator.
Lossless rules give TV exactly 0; the decisions are those of `rules` and `multidraft`.

    >>> from fractions import Fraction as F
    >>> p = lambda s: (F(1, 3), F(2, 3)) if s[-1:] != (1,) else (F(1, 2), F(1, 2))   # rows depend on the prefix
    >>> q = lambda s: (F(1, 2), F(1, 2))
    >>> emitted_distribution(p, q, 2, 2, "block") == target_distribution(p, 2)
    True
    >>> total_variation(emitted_distribution(p, q, 2, 2, "token-no-stop"), target_distribution(p, 2))
    Fraction(1, 36)
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Callable, Sequence
from fractions import Fraction

from .steps import RULES, STEPS, VARIANTS, recursive_rejection_outcomes
from .._checks import check_bool, check_nonnegative


def toy_model(vocab_size: int, seed: object, max_weight: int = 4) -> Callable[[Sequence[int]], tuple[Fraction, ...]]:
    """A random model prefix -> row of Fractions (integer weights 0..max_weight; zeros included), cached.

    >>> model = toy_model(3, seed=1)
    >>> model(()), model((2,))
    ((Fraction(1, 2), Fraction(0, 1), Fraction(1, 2)), (Fraction(0, 1), Fraction(3, 5), Fraction(2, 5)))
    """
    # Subtle: with no token or no weight above 0 the row would be redrawn forever: refuse them here.
    if _count(vocab_size, "vocab_size") < 1 or _count(max_weight, "max_weight") < 1:
        raise ValueError(f"vocab_size and max_weight must be >= 1, got {vocab_size} and {max_weight}")
    cache = {}

    def model(prefix):
        prefix = tuple(prefix)
        if prefix not in cache:
            rng = random.Random(f"{seed}:{prefix}")     # a string seed: the same row on every run and platform
            weights = [0] * vocab_size
            while not any(weights):
                weights = [rng.randint(0, max_weight) for _ in range(vocab_size)]
            cache[prefix] = tuple(Fraction(v, sum(weights)) for v in weights)
        return cache[prefix]
    return model


def _rows(model, name, vocab):
    """Wrap a model: each row is checked once (a distribution over the shared vocabulary) and cached.

    vocab: a one-element list shared by p and q, holding the first row's length.
    """
    cache = {}

    def row(prefix):
        if prefix not in cache:
            r = list(model(prefix))
            vocab[:] = vocab or [len(r)]
            total = sum(r)
            if len(r) != vocab[0]:
                raise ValueError(f"{name}({prefix}) has {len(r)} entries, another row has {vocab[0]}")
            if any(v < 0 for v in r) or abs(total - 1) > (0 if isinstance(total, Fraction) else 1e-9):
                raise ValueError(f"{name}({prefix}) is not a distribution (sums to {total})")
            cache[prefix] = r
        return cache[prefix]
    return row


def _pair(p, q):
    for name, model in (("p", p), ("q", q)):
        if not callable(model):
            raise TypeError(f"{name} must be a function prefix -> row of probabilities, got {type(model).__name__}")
    vocab = []
    return _rows(p, "p", vocab), _rows(q, "q", vocab)


# The keyword options each rule takes (see `step_outcomes`); the token and block rules' are their VARIANTS.
OPTIONS = {"tree": ("width", "replace", "naive"), "typical": ("eps", "delta"), "greedy": (), "token-no-stop": (),
           **{rule: tuple(switches) for rule, switches in VARIANTS.items()}}


def _options(rule, options):
    """The rule's name and options, checked: an unknown rule or option, or a bad value, names itself."""
    if rule not in STEPS:
        raise ValueError(f"rule is {rule!r}; choose one of {', '.join(RULES)}")
    for name, value in options.items():
        if name not in OPTIONS[rule]:
            takes = ", ".join(OPTIONS[rule]) or "no options"
            raise TypeError(f"{name} is not an option of rule {rule!r} (it takes {takes})")
        if name in ("replace", "naive"):
            check_bool(value, name)
        if name == "width" and _count(value, "width") < 1:
            raise ValueError(f"width must be an int >= 1, got {value}")
        if name in ("eps", "delta"):
            check_nonnegative(value, name)
        allowed = VARIANTS.get(rule, {}).get(name)
        if allowed and not any(type(value) is type(a) and value == a for a in allowed):
            raise ValueError(f"{name} is {value!r}; rule {rule!r} takes one of {', '.join(map(repr, allowed))}")
    return STEPS[rule]


# ---- the public functions -----------------------------------------------------------------------------------
def _count(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= 0, got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return int(value)


def step_outcomes(p: Callable, q: Callable, gamma: int, rule: str = "token", prefix: Sequence[int] = (),
                  **options) -> dict:
    """{(n kept, emitted block): probability} of one verification step after `prefix`.

    options: width, replace and naive for "tree"; eps and delta for "typical"; for "token" and "block"
    their switches (`steps.VARIANTS`: the first value of each is the rule, every other one a known
    mistake or a shipped bug), among them reported ("q", "one-hot" or "ones": the draft row the
    verifier is given). With stop=False (the token rule verifying on after a rejection) an outcome
    whose kept tokens are not a prefix of the draft has n = None.

    >>> from fractions import Fraction as F
    >>> step_outcomes(lambda s: (F(1, 2), F(1, 2)), lambda s: (F(1), F(0)), 1, "token")  # draft 0, kept w.p. 1/2
    {(1, (0, 0)): Fraction(1, 4), (1, (0, 1)): Fraction(1, 4), (0, (1,)): Fraction(1, 2)}
    """
    step, out = _options(rule, options), {}
    for prob, n, block in step(*_pair(p, q), _count(gamma, "gamma"), tuple(prefix), **options):
        out[n, block] = out.get((n, block), 0) + prob
    return out


def expected_accepted(p: Callable, q: Callable, gamma: int, rule: str = "token", prefix: Sequence[int] = (),
                      **options) -> Fraction:
    """E[number of drafted tokens kept] in one step after `prefix` (tokens emitted = this + 1)."""
    outcomes = step_outcomes(p, q, gamma, rule, prefix, **options)
    if any(n is None for n, _ in outcomes):
        raise ValueError("with stop=False the kept tokens need not be a prefix of the draft: count them yourself")
    return sum((prob * n for (n, _), prob in outcomes.items()), Fraction(0))


def emitted_distribution(p: Callable, q: Callable, n: int, gamma: int, rule: str = "token",
                         prefix: Sequence[int] = (), **options) -> dict[tuple[int, ...], Fraction]:
    """{first n generated tokens: probability} of speculative generation repeated step after step."""
    n, gamma, step = _count(n, "n"), _count(gamma, "gamma"), _options(rule, options)
    (p, q), steps, out = _pair(p, q), {}, {}

    def go(s, prob):
        if len(s) >= n:
            out[s[:n]] = out.get(s[:n], 0) + prob
            return
        if s not in steps:                       # one step's emitted blocks per context, computed once
            blocks = steps[s] = {}
            for pr, _, block in step(p, q, gamma, tuple(prefix) + s, **options):
                blocks[block] = blocks.get(block, 0) + pr
        for block, pr in steps[s].items():
            go(s + block, prob * pr)
    go((), Fraction(1))
    return out


def target_distribution(p: Callable, n: int, prefix: Sequence[int] = ()) -> dict[tuple[int, ...], Fraction]:
    """{first n tokens: probability} when the target p generates alone."""
    p, out = _rows(p, "p", []), {(): Fraction(1)}
    for _ in range(_count(n, "n")):
        out = {s + (y,): pr * v for s, pr in out.items() for y, v in enumerate(p(tuple(prefix) + s)) if v}
    return out


def multi_draft_distribution(p: Sequence[Fraction], q: Sequence[Fraction], k: int, replace: bool = False,
                             naive: bool = False) -> list[Fraction]:
    """The exact distribution of the token `multidraft.multi_draft_sample` emits from k candidates drawn from q.

    naive=True verifies candidates drawn without replacement against q itself (the mistake).

    >>> from fractions import Fraction as F
    >>> p, q = [F(2, 3), F(0), F(1, 3)], [F(1, 2), F(1, 2), F(0)]
    >>> multi_draft_distribution(p, q, 2) == p                     # candidates (0, 1) or (1, 0), each 1/2
    True
    >>> multi_draft_distribution(p, q, 2, naive=True)              # 0 is kept w.p. 1/2 + 1/2 * 2/3, not 2/3
    [Fraction(5, 6), Fraction(0, 1), Fraction(1, 6)]
    """
    p_row, q_row = list(p), list(q)
    p, q = (row(()) for row in _pair(lambda s: p_row, lambda s: q_row))   # checked: one vocabulary, sums of 1
    _options("tree", {"replace": replace, "naive": naive})
    out = [Fraction(0)] * len(p)
    for prob, _, y in recursive_rejection_outcomes(p, q, _count(k, "k"), replace, naive):
        out[y] += prob
    return out


def total_variation(a: dict | Sequence, b: dict | Sequence) -> Fraction | float:
    """Half the sum of abs(a - b): two dicts {outcome: probability} or two rows of equal length."""
    if isinstance(a, dict):
        return sum((abs(a.get(s, 0) - b.get(s, 0)) for s in set(a) | set(b)), Fraction(0)) / 2
    return sum((abs(x - y) for x, y in zip(a, b)), Fraction(0)) / 2
