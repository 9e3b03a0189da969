"""Tests for the speedup formulas of specdec/theory.py (Leviathan et al. 2023).

Notation: target p, draft q, draft length gamma, acceptance rate alpha, cost ratio c.
References, none of them the code under test:
- hand-worked values, arithmetic in the comments;
- exact rational arithmetic (fractions.Fraction, no rounding at all) from the DEFINITIONS, not from the
  library's formulas: E[tokens] as the mean of the count distribution, sum_n (n + 1) P(n), and the best
  draft length by scanning every gamma exactly;
- simulation at fixed seeds: an i.i.d. Bernoulli(alpha) model in NumPy, and the real sampler
  `specdec.batched.sample_batch` on drafts x ~ q, with the shared z-score tolerance `Z_MAX` (tests/helpers.py).
`acceptance_rate` = 1 - TV is tested by exact enumeration in test_exact_distribution.py.
"""

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from helpers import Z_MAX, max_z
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.batched import sample_batch
from specdec.theory import (accepted_count_distribution, acceptance_rate, expected_tokens_per_step,
                            optimal_draft_length, walltime_speedup)

alphas = st.floats(0.0, 1.0)
gammas = st.integers(0, 30)


def exact_count_distribution(alpha, gamma):
    """P(n accepted drafts) in exact rationals, from the i.i.d. model's definition: the first n drafts pass
    (alpha each) and draft n + 1 fails (1 - alpha), except n = gamma, where all of them passed."""
    a = Fraction(alpha)  # the float alpha, exactly
    return [a ** n * (1 - a) for n in range(gamma)] + [a ** gamma]


def exact_tokens(alpha, gamma):
    """E[tokens per target call] = E[n + 1] over that distribution: n accepted drafts, plus the correction or
    the bonus. Exact, and a different formula from both the closed form and the sum 1 + alpha + ... ."""
    return sum((n + 1) * pr for n, pr in enumerate(exact_count_distribution(alpha, gamma)))


@functools.lru_cache(maxsize=None)
def exact_tokens_up_to(alpha, max_gamma=64):
    """(E[tokens] for gamma = 0..max_gamma), the same mean as `exact_tokens`, built in one pass:
    E(gamma) = sum_{n < gamma} (n + 1) alpha^n (1 - alpha) + (gamma + 1) alpha^gamma."""
    a, out, partial, power = Fraction(alpha), [], Fraction(0), Fraction(1)   # power = a^gamma
    for gamma in range(max_gamma + 1):
        out.append(partial + (gamma + 1) * power)
        partial += (gamma + 1) * power * (1 - a)
        power *= a
    return tuple(out)


def exact_speedups(alpha, c, max_gamma=64):
    """[S(0), ..., S(max_gamma)] exactly: S(gamma) = E[tokens] / (gamma c + 1)."""
    return [e / (g * Fraction(c) + 1) for g, e in enumerate(exact_tokens_up_to(alpha, max_gamma))]


# --- expected_tokens_per_step ----------------------------------------------------------------

@pytest.mark.parametrize("alpha, gamma, expected", [
    (0.5, 2, 1.75),       # (1 - 0.125) / 0.5 = 1 + 0.5 + 0.25
    (0.8, 3, 2.952),      # (1 - 0.8^4) / 0.2 = (1 - 0.4096) / 0.2
    (0.0, 5, 1.0),        # edge: nothing accepted, the target still emits one token
    (0.7, 0, 1.0),        # edge: gamma = 0 is plain decoding
    (1.0, 4, 5.0),        # edge: the alpha = 1 limit, gamma + 1 (the closed form is 0/0 there)
])
def test_expected_tokens_hand_values(alpha, gamma, expected):
    assert expected_tokens_per_step(alpha, gamma) == pytest.approx(expected, abs=1e-12)


@pytest.mark.slow
@settings(max_examples=100)
@given(alpha=alphas, gamma=gammas)
def test_expected_tokens_equals_the_exact_mean_of_the_count_distribution(alpha, gamma):
    exact = exact_tokens(alpha, gamma)
    assert abs(Fraction(expected_tokens_per_step(alpha, gamma)) - exact) <= exact * Fraction(1, 10 ** 13)


def bernoulli_tokens(alpha, gamma, n, seed):
    """Simulate n steps of the i.i.d. model: each draft passes with prob alpha until the first failure."""
    passes = np.random.default_rng(seed).random((n, gamma)) < alpha          # [n, gamma]
    accepted = np.where(passes.all(axis=1), gamma, (~passes).argmax(axis=1))  # leading passes
    return accepted                                                        # tokens = accepted + 1


@pytest.mark.parametrize("alpha, gamma", [(0.3, 2), (0.6, 4), (0.9, 8)])
def test_expected_tokens_against_bernoulli_simulation(alpha, gamma):
    tokens = bernoulli_tokens(alpha, gamma, 100_000, seed=1) + 1
    stderr = tokens.std() / math.sqrt(len(tokens))
    assert abs(tokens.mean() - expected_tokens_per_step(alpha, gamma)) < Z_MAX * stderr


# --- walltime_speedup and optimal_draft_length ------------------------------------------------

@pytest.mark.parametrize("alpha, gamma, c, expected", [
    (0.5, 2, 0.125, 1.4),            # 1.75 / (2 * 0.125 + 1) = 1.75 / 1.25
    (0.8, 3, 0.1, 2.952 / 1.3),      # 2.952 / (3 * 0.1 + 1) = 2.2708
    (0.8, 3, 0.0, 2.952),            # edge: a free draft, speedup = E[tokens]
    (0.2, 4, 0.5, 1.2496 / 3.0),     # (1 - 0.2^5) / 0.8 = 1.2496 over 3: a slowdown, 0.4165
    (0.9, 0, 0.3, 1.0),              # edge: gamma = 0, no speculation, no change
    (1.0, 3, 0.25, 4.0 / 1.75),      # edge: alpha = 1, 4 tokens for 1.75 target-call times
])
def test_walltime_speedup_hand_values(alpha, gamma, c, expected):
    assert walltime_speedup(alpha, gamma, c) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99])
@pytest.mark.parametrize("c", [0.0, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0])   # c = 0: a free draft, S grows forever
def test_optimal_draft_length_is_the_exact_best(alpha, c):
    """Scan every gamma in 0..64 in exact rationals: the returned gamma's exact speedup is the maximum.

    Up to 1e-12 relative: near a flat optimum (or at c = 0, where alpha^gamma stops registering in floats)
    two draft lengths can differ by less than float rounding, and either is a right answer.
    """
    gamma = optimal_draft_length(alpha, c)
    speedups = exact_speedups(alpha, c)
    assert 0 <= gamma <= 64
    assert speedups[gamma] >= max(speedups) * (1 - Fraction(1, 10 ** 12))


@pytest.mark.parametrize("alpha, c, expected", [
    (0.8, 0.05, 8),   # speedups 3.082, 3.092, 3.078 at gamma 7, 8, 9 (theory.py's docstring)
    (0.5, 1.0, 0),    # gamma = 1: 1.5 / 2 = 0.75 < 1: speculation only slows down
    (0.0, 0.0, 0),    # edge: all speedups are 1 (ties) -> the smallest gamma
    (1.0, 0.0, 64),   # edge: speedup gamma + 1 grows without bound -> max_gamma
])
def test_optimal_draft_length_hand_values(alpha, c, expected):
    assert optimal_draft_length(alpha, c) == expected


def test_optimal_draft_length_respects_max_gamma():
    assert optimal_draft_length(1.0, 0.0, max_gamma=5) == 5   # speedups 1, 2, ..., 6
    assert optimal_draft_length(0.8, 0.05, max_gamma=0) == 0


# --- accepted_count_distribution ---------------------------------------------------------------

@pytest.mark.parametrize("alpha, gamma, expected", [
    (0.5, 2, [0.5, 0.25, 0.25]),          # 0.5, 0.5 * 0.5, 0.5^2
    (0.8, 3, [0.2, 0.16, 0.128, 0.512]),  # 0.2, 0.8 * 0.2, 0.64 * 0.2, 0.8^3
    (0.3, 0, [1.0]),                      # edge: gamma = 0, zero drafts accepted for sure
    (0.0, 2, [1.0, 0.0, 0.0]),            # edge: alpha = 0
    (1.0, 2, [0.0, 0.0, 1.0]),            # edge: alpha = 1
])
def test_accepted_count_hand_values(alpha, gamma, expected):
    assert accepted_count_distribution(alpha, gamma) == pytest.approx(expected, abs=1e-12)


@pytest.mark.slow
@settings(max_examples=100)
@given(alpha=alphas, gamma=gammas)
def test_accepted_count_sums_to_one_and_its_mean_is_tokens_minus_one(alpha, gamma):
    """E[tokens] = E[n accepted] + 1: every step also emits the correction or the bonus token."""
    probs = accepted_count_distribution(alpha, gamma)
    assert len(probs) == gamma + 1 and min(probs) >= 0.0
    assert math.fsum(probs) == pytest.approx(1.0, abs=1e-12)
    mean = math.fsum(n * pr for n, pr in enumerate(probs))
    assert mean == pytest.approx(expected_tokens_per_step(alpha, gamma) - 1, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("alpha, gamma", [(0.4, 3), (0.85, 6)])
def test_accepted_count_against_bernoulli_simulation(alpha, gamma):
    counts = bernoulli_tokens(alpha, gamma, 50_000, seed=2)
    assert max_z(counts, accepted_count_distribution(alpha, gamma)) < Z_MAX


# The real sampler: the same (p, q) at every position, so alpha = beta(p, q) exactly.
P = [0.10, 0.20, 0.30, 0.40]
Q = [0.40, 0.30, 0.20, 0.10]   # beta = 0.1 + 0.2 + 0.2 + 0.1 = 0.6, TV = (0.3 + 0.1 + 0.1 + 0.3) / 2 = 0.4


def sampled_counts(gamma, n, seed):
    rng = np.random.default_rng(seed)
    tokens = (np.cumsum(Q)[None, None] < rng.random((n, gamma, 1))).sum(-1)  # x ~ q by inverse CDF
    p = np.broadcast_to(np.array(P), (n, gamma + 1, 4))
    q = np.broadcast_to(np.array(Q), (n, gamma, 4))
    return sample_batch(tokens, q, p, rng)["acceptance_count"]


def test_accepted_count_and_tokens_against_sample_batch():
    alpha, gamma = acceptance_rate(P, Q), 4
    counts = sampled_counts(gamma, 50_000, seed=3)
    assert max_z(counts, accepted_count_distribution(alpha, gamma)) < Z_MAX
    stderr = counts.std() / math.sqrt(len(counts))
    assert abs(counts.mean() + 1 - expected_tokens_per_step(alpha, gamma)) < Z_MAX * stderr


# --- acceptance_rate, by simulation (its exact tests are in test_exact_distribution.py) -------------

def test_acceptance_rate_against_sample_batch():
    """One draft x ~ q against p is accepted with probability beta = 0.1 + 0.2 + 0.2 + 0.1 = 0.6."""
    accepted = sampled_counts(1, 50_000, seed=4)
    beta = acceptance_rate(P, Q)
    assert beta == pytest.approx(0.6, abs=1e-12)
    assert abs(accepted.mean() - beta) < Z_MAX * math.sqrt(beta * (1 - beta) / len(accepted))


# --- validation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("call, error, match", [
    (lambda: expected_tokens_per_step(1.5, 2), ValueError, r"alpha is 1.5, outside \[0, 1\]"),
    (lambda: expected_tokens_per_step(-0.1, 2), ValueError, r"alpha is -0.1"),
    (lambda: expected_tokens_per_step(float("nan"), 2), ValueError, r"alpha is nan"),
    (lambda: expected_tokens_per_step(True, 2), TypeError, r"alpha must be a real number"),   # bool
    (lambda: expected_tokens_per_step(0.5, -1), ValueError, r"gamma is -1"),
    (lambda: expected_tokens_per_step(0.5, True), TypeError, r"gamma must be an int, got bool"),
    (lambda: expected_tokens_per_step(0.5, 2.0), TypeError, r"gamma must be an int, got float"),
    (lambda: accepted_count_distribution(0.5, -2), ValueError, r"gamma is -2"),
    (lambda: accepted_count_distribution(2.0, 2), ValueError, r"alpha is 2.0"),
    (lambda: walltime_speedup(0.5, 2, -0.1), ValueError, r"c is -0.1"),
    (lambda: walltime_speedup(0.5, 2, float("nan")), ValueError, r"c is nan"),
    (lambda: walltime_speedup(0.5, 2, float("inf")), ValueError, r"c is inf"),
    (lambda: walltime_speedup(0.5, 2, "0.1"), TypeError, r"c must be a real number"),
    (lambda: walltime_speedup(0.5, 2.5, 0.1), TypeError, r"gamma must be an int"),
    (lambda: optimal_draft_length(0.5, 0.1, max_gamma=-1), ValueError, r"max_gamma is -1"),
    (lambda: optimal_draft_length(1.2, 0.1), ValueError, r"alpha is 1.2"),
])
def test_bad_input_raises_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("gamma", [1, 4, 8])
@pytest.mark.parametrize("h", [1e-4, 1e-7, 1e-10, 1e-13])
def test_expected_tokens_per_step_is_accurate_just_below_alpha_1(h, gamma):
    """Near alpha = 1 the closed form (1 - alpha^(gamma+1)) / (1 - alpha) cancels: its relative error is
    ~1e-16 / h, 1e-6 at h = 1e-10. The library must keep full accuracy there, and stay continuous with
    its alpha = 1 value gamma + 1.

    Reference: the exact mean of the count distribution (`exact_tokens`), in rationals.
    """
    alpha = 1.0 - h
    exact = exact_tokens(alpha, gamma)
    value = expected_tokens_per_step(alpha, gamma)
    assert abs(Fraction(value) - exact) / exact < 1e-15
    assert value <= gamma + 1 == expected_tokens_per_step(1.0, gamma)
