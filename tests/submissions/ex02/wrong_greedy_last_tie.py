"""Wrong: at temperature 0, a tie goes to the LAST largest logit."""
import math


def softmax(logits, temperature=1.0):
    if isinstance(temperature, bool) or not 0 <= temperature < math.inf:
        raise ValueError("temperature must be a finite number >= 0")
    z = [float(v) for v in logits]
    if not z or any(v != v or v == math.inf for v in z) or max(z) == -math.inf:
        raise ValueError("bad logits")
    top = max(z)
    if temperature == 0:
        best = max(j for j, v in enumerate(z) if v == top)
        return [1.0 if j == best else 0.0 for j in range(len(z))]
    weights = [math.exp((v - top) / temperature) for v in z]
    total = math.fsum(weights)
    return [w / total for w in weights]
