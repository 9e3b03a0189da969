"""exercises/common/stats.py: the statistical cases' acceptance intervals, against binomial tails in Fractions."""

import math
from fractions import Fraction

from exercises.common import stats


def test_the_acceptance_intervals_leave_out_exactly_the_stated_tails():
    n, t = 300, Fraction(1, 10)                  # a small n, so that the binomial is summed in Fractions
    tests, false_alarm = stats.law_test({"a": 1 - t, "b": t}, n)
    pmf = [math.comb(n, k) * t ** k * (1 - t) ** (n - k) for k in range(n + 1)]
    a = Fraction(stats.LAW_ALPHA) / 4              # two bins, two tails each
    _, _, _, lo, hi = tests[1]                      # the bin of "b": X ~ Binomial(300, 1/10)
    assert sum(pmf[:lo]) <= a < sum(pmf[:lo + 1]) and sum(pmf[hi + 1:]) <= a < sum(pmf[hi:])
    assert math.isclose(false_alarm, float(2 * (sum(pmf[:lo]) + sum(pmf[hi + 1:]))), rel_tol=1e-6)
    assert false_alarm <= stats.LAW_ALPHA
