"""Wrong: multiplies the logits by the temperature instead of dividing."""
import math


def softmax(logits, temperature=1.0):
    if isinstance(temperature, bool) or not 0 <= temperature < math.inf:
        raise ValueError("temperature must be a finite number >= 0")
    z = [float(v) for v in logits]
    if not z or any(v != v or v == math.inf for v in z) or max(z) == -math.inf:
        raise ValueError("bad logits")
    top = max(z)
    if temperature == 0:
        return [1.0 if j == z.index(top) else 0.0 for j in range(len(z))]
    weights = [math.exp((v - top) * temperature) for v in z]
    total = math.fsum(weights)
    return [w / total for w in weights]
