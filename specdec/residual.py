"""The residual distribution, and the two ways to pick a token from a row: the graded problem's argmax and a draw.

When the target p rejects a drafted token, the replacement comes from what p
has that q lacks (Leviathan et al. 2023, target p, draft q):

    residual(y) = max(0, p(y) - q(y)) / sum_z max(0, p(z) - q(z))

    >>> residual_distribution([0.1, 0.6, 0.3], [0.5, 0.2, 0.3])
    [0.0, 1.0, 0.0]

Block verification (`block.py`) uses the same residual with p scaled by a
weight w in [0, 1]: normalize(max(0, w p - q)), and its mass
`residual_mass(p, q, w)`. The graded rule picks from the residual with
`argmax`; the lossless rules draw from it with `sample_from`.

Convention (the graded problem leaves it open): if the residual has no mass, which with
exact distributions can only happen when p == q (and then nothing is ever
rejected), fall back to p itself. This is the fix for the 0/0 NaN that
jaymody/speculative-sampling#5 shipped; vLLM v1 returned token 0 instead.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from ._checks import first_too_large


def residual_distribution(p: Sequence[float], q: Sequence[float], weight: float = 1,
                          exact: bool = False) -> list[float]:
    """Return normalize(max(0, weight * p - q)) as a list, or a copy of p when that has no mass.

    p and q are probability rows of equal length (lists, tuples or arrays);
    neither is modified. weight is 1 except in block verification. exact=True
    keeps the rows' own arithmetic (Fractions stay Fractions: `specdec.exact`).

    >>> residual_distribution([0.5, 0.5], [0.5, 0.5])  # no mass: fall back to p
    [0.5, 0.5]
    >>> residual_distribution([0.5, 0.5], [0.75, 0.25], weight=0.75)  # max(0, [0.375 - 0.75, 0.375 - 0.25])
    [0.0, 1.0]
    >>> from fractions import Fraction as F
    >>> residual_distribution([F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)], exact=True)
    [Fraction(0, 1), Fraction(1, 1)]
    """
    if len(p) != len(q):
        raise ValueError(f"p has {len(p)} entries but q has {len(q)}")
    if exact:
        excess = [max(0, weight * pi - qi) for pi, qi in zip(p, q)]
        mass = sum(excess)
        return [e / mass for e in excess] if mass > 0 else list(p)
    try:
        excess = [max(0.0, weight * float(pi) - float(qi)) for pi, qi in zip(p, q)]
    except OverflowError:  # an int too large for a float (10 ** 400): say which
        raise first_too_large(weight=weight, p=p, q=q) from None
    mass = math.fsum(excess)  # exactly rounded: the same on every Python (3.12 changed sum())
    if mass <= 0.0:
        return [float(pi) for pi in p]
    return [e / mass for e in excess]


def residual_mass(p: Sequence[float], q: Sequence[float], weight: float = 1, exact: bool = False) -> float:
    """sum_y max(0, weight * p(y) - q(y)); with weight 1 this is TV(p, q) = 1 - beta (exact: as residual_distribution).

    >>> residual_mass([0.5, 0.25, 0.25], [0.25, 0.25, 0.5])  # 0.25 + 0 + 0
    0.25
    """
    if exact:
        return sum(max(0, weight * pi - qi) for pi, qi in zip(p, q))
    try:
        return math.fsum(max(0.0, weight * float(pi) - float(qi)) for pi, qi in zip(p, q))
    except OverflowError:
        raise first_too_large(weight=weight, p=p, q=q) from None


def argmax(row: Sequence[float]) -> int:
    """Index of the largest entry; ties go to the lower index (the graded problem's rule).

    >>> argmax([0.2, 0.4, 0.4])
    1
    """
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best]:  # strict: an equal value later never wins
            best = j
    return best


def sample_from(row: Sequence[float], rng: random.Random) -> int:
    """Draw an index from the distribution `row` by inverting its CDF with one uniform.

    Subtle: float rounding can leave the running sum a hair below u at the end;
    the last index with positive mass is then returned, never one with zero mass.
    """
    try:
        u = rng.random() * sum(row)
    except OverflowError:
        raise first_too_large(row=row) from None
    cumulative = 0.0
    last = None
    for j, w in enumerate(row):
        if w > 0.0:
            cumulative += w
            last = j
            if u < cumulative:
                return j
    return last
