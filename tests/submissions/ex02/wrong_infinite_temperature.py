"""Wrong: a stable softmax whose checks let an infinite temperature through: (z - max) / inf is 0 for every
finite logit, so it returns uniform probabilities where the statement asks for ValueError."""
import math


def softmax(logits, temperature=1.0):
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
        raise ValueError(f"temperature must be a number >= 0, got {temperature!r}")   # nan and < 0, not inf
    z = [float(v) for v in logits]
    if not z or any(math.isnan(v) or v == math.inf for v in z):
        raise ValueError("logits must be non-empty, finite or -inf")
    top = max(z)
    if top == -math.inf:
        raise ValueError("every logit is -inf")
    if temperature == 0:
        return [1.0 if j == z.index(top) else 0.0 for j in range(len(z))]
    weights = [math.exp((v - top) / temperature) if v > -math.inf else 0.0 for v in z]
    total = math.fsum(weights)
    return [w / total for w in weights]
