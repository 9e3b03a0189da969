"""Logits to probabilities: the stable softmax, with temperature (plain Python).

A model scores every token with a logit z; the next-token distribution is

    softmax(z / T)_j = exp(z_j / T) / sum_k exp(z_k / T)

Subtracting max(z) first changes nothing mathematically (it cancels in the
ratio) but keeps exp() from overflowing: exp(1000) is inf in float64.

    >>> [round(v, 4) for v in softmax([2.0, 1.0, 0.0])]
    [0.6652, 0.2447, 0.09]
    >>> [round(v, 4) for v in softmax([1000.0, 999.0])]  # the naive formula gives nan
    [0.7311, 0.2689]
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

from ._checks import to_float


def softmax(logits: Sequence[float], temperature: float = 1.0) -> list[float]:
    """Probabilities from logits; temperature > 0 sharpens (< 1) or flattens (> 1) them.

    temperature 0 is the greedy limit: all mass on the argmax (ties: lowest index).
    """
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or not 0 <= temperature < math.inf:
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    temperature = to_float(temperature, "temperature")
    z = [to_float(v, f"logits[{j}]") for j, v in enumerate(logits)]
    if not z:
        raise ValueError("logits is empty")
    for j, v in enumerate(z):
        if math.isnan(v) or v == math.inf:
            raise ValueError(f"logits[{j}] is {v}: logits must be finite or -inf")
    top = max(z)
    if top == -math.inf:
        raise ValueError("every logit is -inf: no token can be chosen")
    if temperature == 0:
        best = z.index(top)
        return [1.0 if j == best else 0.0 for j in range(len(z))]
    weights = [math.exp((v - top) / temperature) for v in z]
    total = math.fsum(weights)
    return [w / total for w in weights]


def naive_softmax(logits: Sequence[float]) -> list[float]:
    """softmax without the max shift, kept to show why the shift matters.

    >>> naive_softmax([1000.0, 999.0])
    [nan, nan]
    """
    weights = []
    for v in logits:
        try:
            weights.append(math.exp(v))
        except OverflowError:  # Python floats raise where NumPy returns inf
            weights.append(math.inf)
    total = sum(weights)
    return [w / total for w in weights]
