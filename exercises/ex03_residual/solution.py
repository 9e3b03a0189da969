"""Exercise 3: the residual distribution a rejection resamples from.

When the target p rejects a drafted token, the replacement comes from the mass p has that the draft q
lacks: residual(y) = max(0, p(y) - q(y)) / sum_z max(0, p(z) - q(z)). If that has no mass (p == q,
when nothing is ever rejected anyway), return a copy of p instead of dividing 0 by 0. p and q must have
the same length (ValueError otherwise) and are not modified.

    >>> residual_distribution([0.1, 0.6, 0.3], [0.5, 0.2, 0.3])  # excess [0, 0.4, 0] / 0.4
    [0.0, 1.0, 0.0]
"""


def residual_distribution(p: list[float], q: list[float]) -> list[float]:
    """Return normalize(max(0, p - q)) as a new list, or a copy of p when that has no mass.

    Args:
        p: Target probabilities, one per token.
        q: Draft probabilities over the same tokens.
    Returns:
        A list of floats summing to 1, as long as p.

    >>> [round(v, 4) for v in residual_distribution([0.5, 0.3, 0.2], [0.2, 0.2, 0.6])]  # [0.3, 0.1, 0] / 0.4
    [0.75, 0.25, 0.0]
    >>> residual_distribution([0.5, 0.5], [0.5, 0.5])  # no mass: fall back to p
    [0.5, 0.5]
    """
    ### BEGIN SOLUTION
    if len(p) != len(q):
        raise ValueError(f"p has {len(p)} entries but q has {len(q)}")
    excess = [max(0.0, float(pj) - float(qj)) for pj, qj in zip(p, q)]
    mass = sum(excess)
    if mass <= 0.0:  # p == q: the 0/0 that shipped as NaN in jaymody/speculative-sampling#5
        return [float(pj) for pj in p]
    return [e / mass for e in excess]
    ### END SOLUTION
