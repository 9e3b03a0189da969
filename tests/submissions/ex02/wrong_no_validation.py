"""Wrong: a correct stable softmax that never checks its inputs."""
import math


def softmax(logits, temperature=1.0):
    z = list(logits)
    top = max(z)
    if temperature == 0:
        return [1.0 if j == z.index(top) else 0.0 for j in range(len(z))]
    weights = [math.exp((v - top) / temperature) for v in z]
    total = math.fsum(weights)
    return [w / total for w in weights]
