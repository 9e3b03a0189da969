"""Wrong: divides by the residual's mass even when it is 0 (p == q)."""


def residual_distribution(p, q):
    if len(p) != len(q):
        raise ValueError(f"p has {len(p)} entries but q has {len(q)}")
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    return [e / mass for e in excess]
