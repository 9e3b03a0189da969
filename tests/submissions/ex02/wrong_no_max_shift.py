"""Wrong: exp() of the raw logits; right until a logit is near +-1000."""
import math


def softmax(logits, temperature=1.0):
    if isinstance(temperature, bool) or not 0 <= temperature < math.inf:
        raise ValueError("temperature must be a finite number >= 0")
    z = [float(v) for v in logits]
    if not z or any(math.isnan(v) or v == math.inf for v in z) or max(z) == -math.inf:
        raise ValueError("bad logits")
    if temperature == 0:
        best = z.index(max(z))
        return [float(j == best) for j in range(len(z))]
    weights = [math.exp(v / temperature) for v in z]  # no shift: exp(1000) overflows, exp(-1000) is 0
    total = sum(weights)
    return [w / total for w in weights]
