"""Random probability rows for hidden cases: exact dyadic ones and smooth ones.

Dyadic rows hold multiples of 1/32, exact in binary floating point, so a sum is
exactly 1 and a comparison such as p(x) <= q(x) means what it says; smooth rows
have every entry > 0, as a model's softmax would give.

    >>> import random
    >>> dyadic_row(random.Random(0), 3, positive=[1])[1] > 0
    True
"""


def dyadic_row(rng, vocab, total=32, positive=(), denominator=32):
    """`vocab` entries k/denominator with the k summing to `total` (exact in binary floating point).

    With the defaults, a distribution summing to exactly 1. Entries listed in
    `positive` get at least 1/denominator.
    """
    weights = [1 if j in positive else 0 for j in range(vocab)]
    for _ in range(total - sum(weights)):
        weights[rng.randrange(vocab)] += 1
    return [w / denominator for w in weights]


def smooth_row(rng, vocab):
    """A random distribution with every entry > 0 (real-valued, as a model's softmax would give)."""
    weights = [rng.random() ** 2 + 1e-3 for _ in range(vocab)]
    total = sum(weights)
    return [w / total for w in weights]
