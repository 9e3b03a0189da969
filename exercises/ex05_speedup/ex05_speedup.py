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
    raise NotImplementedError("write acceptance_rate")


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
    raise NotImplementedError("write expected_tokens_per_step")
