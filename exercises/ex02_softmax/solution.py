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

### BEGIN SOLUTION
import math
import numbers
### END SOLUTION


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
    ### BEGIN SOLUTION
    # The chained test also refuses NaN (every comparison with NaN is False) and inf, where
    # (-inf - top) / inf would be NaN.
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or not 0 <= temperature < math.inf:
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    z = [float(v) for v in logits]
    if not z:
        raise ValueError("logits is empty")
    for j, v in enumerate(z):
        if math.isnan(v) or v == math.inf:
            raise ValueError(f"logits[{j}] is {v}: logits must be finite or -inf")
    top = max(z)
    if top == -math.inf:
        raise ValueError("every logit is -inf: no token can be chosen")
    if temperature == 0:
        best = z.index(top)  # index() returns the first occurrence: ties go to the lower index
        return [1.0 if j == best else 0.0 for j in range(len(z))]
    # Shifted by the max, every exponent is <= 0: exp() lands in (0, 1], and the top token gives exactly 1.
    weights = [math.exp((v - top) / temperature) for v in z]
    total = math.fsum(weights)
    return [w / total for w in weights]
    ### END SOLUTION
