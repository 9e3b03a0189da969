"""Wrong: normalizes p - q without clipping the negative differences at 0."""


def residual_distribution(p, q):
    if len(p) != len(q):
        raise ValueError("length mismatch")
    diff = [a - b for a, b in zip(p, q)]
    mass = sum(diff)
    if mass <= 0:
        return [float(a) for a in p]
    return [d / mass for d in diff]
