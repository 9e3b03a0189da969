"""Wrong: returns max(0, p - q) without dividing by its sum."""


def residual_distribution(p, q):
    if len(p) != len(q):
        raise ValueError("length mismatch")
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    if sum(excess) == 0:
        return [float(a) for a in p]
    return excess
