"""Exercise 2: the numerically stable softmax, with temperature.

A model scores every token with a logit z; the next-token distribution is
softmax(z / T)_j = exp(z_j / T) / sum_k exp(z_k / T). Subtract max(z) before exponentiating: it cancels
in the ratio but keeps exp() from overflowing on large logits. Temperature T > 0 sharpens (T < 1) or
flattens (T > 1) the distribution; T = 0 is the greedy limit, all mass on the first largest logit.
-inf logits are allowed (probability 0); an empty list, NaN or +inf logits, all logits -inf, or a
temperature that is negative, NaN or infinite raise ValueError.

    >>> [round(v, 4) for v in softmax([1000.0, 999.0])]  # exp(1000) alone would overflow
    [0.7311, 0.2689]
"""


def softmax(logits: list[float], temperature: float = 1.0) -> list[float]:
    """Return the probabilities softmax(logits / temperature) as a list of floats.

    Args:
        logits: Scores, one per token (finite or -inf).
        temperature: A finite number >= 0; 0 means greedy (one-hot on the first largest logit).
    Returns:
        A list of non-negative floats summing to 1, as long as `logits`.

    >>> [round(v, 4) for v in softmax([2.0, 1.0, 0.0])]
    [0.6652, 0.2447, 0.09]
    >>> softmax([1.0, 3.0, 3.0], temperature=0)
    [0.0, 1.0, 0.0]
    """
    raise NotImplementedError("write softmax")
