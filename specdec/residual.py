"""The residual distribution and the seed's argmax: the two pieces a rejection needs.

When the target p rejects a drafted token, the replacement comes from what p
has that q lacks (Leviathan et al. 2023, target p, draft q):

    residual(y) = max(0, p(y) - q(y)) / sum_z max(0, p(z) - q(z))

    >>> residual_distribution([0.1, 0.6, 0.3], [0.5, 0.2, 0.3])
    [0.0, 1.0, 0.0]

Convention (the seed leaves it open): if the residual has no mass, which with
exact distributions can only happen when p == q (and then nothing is ever
rejected), fall back to p itself. This is the fix for the 0/0 NaN that
jaymody/speculative-sampling#5 shipped; vLLM v1 returned token 0 instead.
"""

import math


def residual_distribution(p, q):
    """Return normalize(max(0, p - q)) as a list, or a copy of p when that has no mass.

    p and q are probability rows of equal length (lists, tuples or arrays);
    neither is modified.

    >>> residual_distribution([0.5, 0.5], [0.5, 0.5])  # no mass: fall back to p
    [0.5, 0.5]
    """
    if len(p) != len(q):
        raise ValueError(f"p has {len(p)} entries but q has {len(q)}")
    excess = [max(0.0, float(pi) - float(qi)) for pi, qi in zip(p, q)]
    mass = math.fsum(excess)  # exactly rounded: the same on every Python (3.12 changed sum())
    if mass <= 0.0:
        return [float(pi) for pi in p]
    return [e / mass for e in excess]


def argmax(row):
    """Index of the largest entry; ties go to the lower index (the seed's rule).

    >>> argmax([0.2, 0.4, 0.4])
    1
    """
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best]:  # strict: an equal value later never wins
            best = j
    return best
