"""Shared test settings and helpers.

Settings: hypothesis runs derandomized, so every run tries the same examples.

Helpers, imported by the test files with `from conftest import ...` (pytest puts tests/ on sys.path).
Subtle: pytest imports every conftest.py it loads as the module `conftest`, so this must stay the only one
it loads (pyproject.toml's norecursedirs keeps it out of tests/submissions/):

- `GRADED_EXAMPLES`: the graded problem's three examples, verbatim (their statement is in
  exercises/ex01_verify/README.md);
- `tv(a, b)`: total-variation distance, 1/2 sum |a - b|;
- `max_z(samples, probs)` and `Z_MAX`: the per-bin z-score that every fixed-seed statistical test uses;
- `FixedRandom(u)`: a `random.Random` whose every uniform is `u`, for hand-checkable sampler decisions.

Tests that take more than about half a second carry `@pytest.mark.slow`: `make quick` skips them,
`make test` runs everything. The suite runs NumPy's OpenBLAS on one thread (below).
"""

import math
import os
import random

# Subtle: OpenBLAS starts a thread per core for every matrix product. On a busy 2-core machine those threads spin
# against the other processes: test_decode's sampled-generation test took 1.9 s to 28.7 s from run to run with
# them, 2.3 s to 2.9 s with one thread. So the suite pins one thread. It must be set before NumPy loads OpenBLAS
# (pytest loads this file before any test module); notebook kernels started later inherit it. setdefault: an
# explicit OPENBLAS_NUM_THREADS from the caller wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402  (after the environment variable, on purpose)
from hypothesis import HealthCheck, settings  # noqa: E402

# derandomize: a red CI is reproducible on any machine; deadline=None: no timing-based failures on a busy 2-core box.
settings.register_profile("specdec", derandomize=True, deadline=None, max_examples=200,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("specdec")


# The graded problem's examples: (title, (draft_tokens, draft_probs, target_probs, random_samples), expected).
# Example 2's title is wrong and its expected output right (test_verify.py works through why);
# example 3 expects a ValueError.
GRADED_EXAMPLES = [
    ("All tokens accepted with bonus token",
     ([2, 1], [[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]], [[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], [0.5, 0.4]),
     {"accepted_tokens": [2, 1], "bonus_token": 0, "acceptance_count": 2}),
    ("Second token rejected with resample",
     ([0, 1], [[0.8, 0.2], [0.9, 0.1]], [[0.9, 0.1], [0.1, 0.9]], [0.5, 0.8]),
     {"accepted_tokens": [0, 1], "bonus_token": None, "acceptance_count": 2}),
    ("Input length mismatch error",
     ([0], [[0.5, 0.5]], [[0.5, 0.5]], [0.1, 0.2]),
     ValueError),
]


def tv(a, b):
    """Total-variation distance between two rows of the same length: 1/2 sum_x |a(x) - b(x)|."""
    assert len(a) == len(b), f"rows of length {len(a)} and {len(b)}"
    return 0.5 * math.fsum(abs(x - y) for x, y in zip(a, b))


# Per-bin z-score tolerance of every statistical test. Under a correct sampler each bin's z is about N(0, 1),
# so |z| > 4.5 has probability ~7e-6 per bin; the seeds are fixed, so outcomes are reproducible anyway.
Z_MAX = 4.5


def max_z(samples, probs):
    """Largest per-bin |count - n p| / sqrt(n p (1 - p)) of integer `samples` against `probs`.

    A bin with probability 0 or 1 has no spread: any deviation there is infinitely unlikely (inf).

    >>> max_z([0, 0, 1, 1], [0.5, 0.5, 0.0])
    0.0
    >>> max_z([0, 2], [0.5, 0.5, 0.0])
    inf
    """
    samples = np.asarray(samples, dtype=np.int64)
    n = len(samples)
    counts = np.bincount(samples, minlength=len(probs))
    if len(counts) > len(probs):
        return math.inf  # a sample outside the support
    worst = 0.0
    for count, pr in zip(counts.tolist(), probs):
        if pr in (0.0, 1.0):
            if count != n * pr:
                return math.inf
            continue
        worst = max(worst, abs(count - n * pr) / math.sqrt(n * pr * (1.0 - pr)))
    return worst


class FixedRandom(random.Random):
    """A Random whose every uniform is `u`: makes a sampler's decisions hand-checkable."""

    def __init__(self, u):
        super().__init__(0)
        self.u = u

    def random(self):
        return self.u
