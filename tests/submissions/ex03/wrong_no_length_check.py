"""Wrong: zip() truncates when p and q differ in length, instead of raising ValueError."""


def residual_distribution(p, q):
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    if mass <= 0.0:
        return [float(a) for a in p]
    return [e / mass for e in excess]
