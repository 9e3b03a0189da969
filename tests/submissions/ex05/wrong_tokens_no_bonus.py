"""Wrong: expected_tokens_per_step forgets the bonus token: gamma terms instead of gamma + 1."""
import math


def _row(r, name):
    r = [float(v) for v in r]
    if not r or any(not math.isfinite(v) or v < 0 for v in r) or abs(math.fsum(r) - 1) > 1e-4:
        raise ValueError(f"{name} is not a distribution")
    return r


def acceptance_rate(p, q):
    p, q = _row(p, "p"), _row(q, "q")
    if len(p) != len(q):
        raise ValueError("p and q differ in length")
    return math.fsum(min(a, b) for a, b in zip(p, q))


def expected_tokens_per_step(alpha, gamma):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise TypeError("alpha must be a number")
    if isinstance(gamma, bool) or not isinstance(gamma, int):
        raise TypeError("gamma must be an int")
    if not 0 <= alpha <= 1 or gamma < 0:
        raise ValueError("alpha in [0, 1] and gamma >= 0")
    return math.fsum(alpha ** n for n in range(gamma))
