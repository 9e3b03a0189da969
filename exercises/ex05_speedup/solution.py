"""Exercise 5: what speculation buys, in two formulas (Leviathan et al. 2023).

One drafted token x ~ q survives verification against the target p with probability
beta = sum_x min(p(x), q(x)) = 1 - TV(p, q); its average over contexts is the acceptance rate alpha.
With gamma drafted tokens per step, each accepted independently with probability alpha, one target call
emits on average (1 - alpha^(gamma+1)) / (1 - alpha) tokens = 1 + alpha + ... + alpha^gamma, which is
gamma + 1 at alpha = 1. Rows that are not distributions, alpha outside [0, 1] and gamma < 0 raise
ValueError.

    >>> acceptance_rate([0.1, 0.6, 0.3], [0.5, 0.2, 0.3])  # 0.1 + 0.2 + 0.3
    0.6
    >>> expected_tokens_per_step(0.5, 2)  # 1 + 0.5 + 0.25
    1.75
"""

### BEGIN SOLUTION
import math
import numbers

# A row must sum to 1 within this: float32 softmax output passes, logits or raw weights do not.
SUM_TOLERANCE = 1e-4


def _check_row(row, name, width=None):
    """Return `row` as a list of floats forming a distribution, or raise naming it."""
    row = list(row)
    if not row:
        raise ValueError(f"{name} is empty")
    if width is not None and len(row) != width:
        raise ValueError(f"{name} has {len(row)} entries but p has {width}")
    values = []
    for j, v in enumerate(row):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name}[{j}] must be a real number, got {v!r}")
        v = float(v)
        if not math.isfinite(v) or v < 0.0:
            raise ValueError(f"{name}[{j}] is {v}: probabilities must be finite and >= 0")
        values.append(v)
    if abs(math.fsum(values) - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"{name} sums to {math.fsum(values):.6g}, not 1")
    return values
### END SOLUTION


def acceptance_rate(p: list[float], q: list[float]) -> float:
    """Return beta = sum_x min(p(x), q(x)): the chance that one draft x ~ q is accepted against p.

    Args:
        p: Target probabilities, one per token.
        q: Draft probabilities over the same tokens.
    Returns:
        A float in [0, 1]; 1 exactly when p == q, 0 when they share no token.

    >>> acceptance_rate([1.0, 0.0], [0.0, 1.0])  # disjoint supports: always rejected
    0.0
    """
    ### BEGIN SOLUTION
    p = _check_row(p, "p")
    q = _check_row(q, "q", len(p))
    return math.fsum(min(pj, qj) for pj, qj in zip(p, q))  # fsum: exact sum of the mins, then one rounding
    ### END SOLUTION


def expected_tokens_per_step(alpha: float, gamma: int) -> float:
    """Return (1 - alpha^(gamma+1)) / (1 - alpha), tokens emitted per target call; gamma + 1 at alpha = 1.

    Args:
        alpha: Acceptance rate, a number in [0, 1].
        gamma: Number of drafted tokens per step, an int >= 0.
    Returns:
        A float in [1, gamma + 1].

    >>> expected_tokens_per_step(1.0, 4)  # every draft accepted, plus the bonus token
    5.0
    """
    ### BEGIN SOLUTION
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a real number, got {type(alpha).__name__}")
    alpha = float(alpha)
    if not 0.0 <= alpha <= 1.0:  # also refuses NaN
        raise ValueError(f"alpha is {alpha}, outside [0, 1]")
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Integral):
        raise TypeError(f"gamma must be an int, got {type(gamma).__name__}")
    gamma = int(gamma)
    if gamma < 0:
        raise ValueError(f"gamma is {gamma}, it must be >= 0")
    if alpha == 1.0:  # the closed form is 0/0 here; the sum 1 + 1 + ... has gamma + 1 terms
        return float(gamma + 1)
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)
    ### END SOLUTION
