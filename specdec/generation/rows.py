"""The rules' row operations on NumPy rows [V]: the backend `decode.py` runs `rules` and `multidraft` with.

`rules.PlainRows` works on lists of floats, one entry at a time; speculative generation
holds NumPy rows from the models, and these are the same five operations (plus trees'
`without`) written with NumPy. The rules (what to test, when to stop, what to emit) are
not here: they stay in `rules.py`. `tests/library/test_rules.py` checks each operation against
its plain twin, and the rules on both backends draw for draw.

    >>> import random
    >>> NumpyRows.residual(np.array([0.1, 0.6, 0.3]), np.array([0.5, 0.2, 0.3])).tolist()
    [0.0, 1.0, 0.0]
    >>> sample_index(np.array([0.0, 0.25, 0.75]), random.Random(0))   # u = 0.844: past 0.25, in the 0.75
    2
"""

import numpy as np


def tempered_probs(z, temperature):
    """softmax(z / T) along each row of logits z [B, V], in place and in z's own precision (the models' rows).

    >>> tempered_probs(np.log(np.array([[1.0, 3.0]])), 1.0).round(2).tolist()
    [[0.25, 0.75]]
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 here, got {temperature!r} (use argmax for greedy)")
    if temperature != 1:
        z /= temperature
    z -= z.max(1, keepdims=True)                                       # the largest logit is 0: no overflow
    np.exp(z, out=z)
    z /= z.sum(1, keepdims=True)
    return z


def sample_index(row, rng):
    """Draw an index from the distribution `row` (inverse CDF; never an index with zero mass)."""
    cdf = np.cumsum(row)
    # side='right': the first j with cdf[j] > u * total, so row[j] > 0
    return min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(row) - 1)


class NumpyRows:
    """The row operations of `rules.PlainRows` (and trees' `without`) on NumPy rows [V]."""

    @staticmethod
    def residual(p, q, weight=1):
        excess = np.maximum(p - q if weight == 1 else weight * p - q, 0.0)
        mass = excess.sum()
        return excess / mass if mass > 0 else p

    @staticmethod
    def residual_mass(p, q, weight=1):
        return float(np.maximum(weight * p - q, 0.0).sum())

    sample = staticmethod(sample_index)

    @staticmethod
    def argmax(row):
        return int(np.argmax(row))                                  # the first maximum: ties to the lower id

    @staticmethod
    def entropy(row):
        nz = row[row > 0]
        return float(-(nz * np.log(nz)).sum())

    @staticmethod
    def without(q, removed):
        if not removed:
            return q
        kept = np.array(q, dtype=np.float64)
        kept[list(removed)] = 0.0
        mass = kept.sum()
        return kept / mass if mass > 0 else kept
