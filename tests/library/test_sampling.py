"""Tests for the lossless sampler `specdec.speculative_sample` (specdec/sampling.py).

References, none of them the code under test:
- the target rows p themselves (Leviathan et al. 2023, Theorem: every emitted token is distributed as p
  when each draft x_i ~ q_i), checked by fixed-seed Monte Carlo with a stated tolerance;
- the product of per-position acceptance rates beta_i = sum_x min(p_i(x), q_i(x)), worked by hand below;
- the graded `verify_speculative_tokens`, which must raise exactly the same errors;
- deterministic "random" generators (a `random.Random` whose random() returns a fixed u), which turn
  the accept test and the inverse-CDF draw into hand-checkable arithmetic.

Statistical tolerance: for each token bin, z = |count - n p| / sqrt(n p (1 - p)) must stay below Z_MAX = 4.5
(`max_z` and `Z_MAX` are shared in tests/helpers.py). Under a correct sampler z is ~ N(0, 1) per bin, so a false
alarm has probability ~7e-6 per bin (about 1e-4 over every bin in this file); the seeds are fixed, so the
outcome is reproducible anyway. A wrong rule shifts some bin by >= 0.05, which at n >= 5000 is more than
7 sigma: `test_tolerance_has_power` checks that the same test rejects the draft distribution q in place of p.
The N = 20,000-call Monte Carlo tests are marked slow (`make quick` skips them).
"""

import random

import numpy as np
import pytest
from helpers import Z_MAX, FixedRandom, max_z
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec import speculative_sample, verify_speculative_tokens
from specdec.residual import sample_from
from specdec.sampling import make_rng

# Three drafted positions over V = 4 tokens, with a different (q_i, p_i) pair at each so the
# acceptance rates differ; p_3 is the target's bonus row.
Q = [[0.40, 0.30, 0.20, 0.10],
     [0.25, 0.25, 0.25, 0.25],
     [0.30, 0.30, 0.30, 0.10]]
P = [[0.10, 0.20, 0.30, 0.40],   # beta_0 = 0.1 + 0.2 + 0.2 + 0.1   = 0.60
     [0.70, 0.10, 0.10, 0.10],   # beta_1 = 0.25 + 0.1 + 0.1 + 0.1  = 0.55
     [0.30, 0.30, 0.20, 0.20],   # beta_2 = 0.3 + 0.3 + 0.2 + 0.1   = 0.90
     [0.50, 0.00, 0.25, 0.25]]   # bonus row (token 1 has zero mass)
BETAS = [0.60, 0.55, 0.90]
# P(n accepted) = beta_0 ... beta_{n-1} (1 - beta_n), and beta_0 beta_1 beta_2 for n = K = 3:
#   P(0) = 0.4,  P(1) = 0.6 * 0.45 = 0.27,  P(2) = 0.6 * 0.55 * 0.1 = 0.033,  P(3) = 0.6 * 0.55 * 0.9 = 0.297
COUNT_PROBS = [0.4, 0.27, 0.033, 0.297]
N = 20_000


@pytest.fixture(scope="module")
def runs():
    """N verifications of a K = 3 draft whose tokens are drawn from q (NumPy) and verified with a seeded Random."""
    draws = np.random.default_rng(2024)
    drafts = np.stack([draws.choice(4, size=N, p=q) for q in Q], axis=1)  # [N, K]
    rng = random.Random(7)
    return [speculative_sample([int(x) for x in row], Q, P, rng) for row in drafts]


def emitted(out):
    return out["accepted_tokens"] + ([out["bonus_token"]] if out["bonus_token"] is not None else [])


@pytest.mark.slow
def test_first_emitted_token_is_distributed_as_p0(runs):
    assert max_z([emitted(o)[0] for o in runs], P[0]) < Z_MAX


@pytest.mark.slow
def test_second_token_given_first_accepted_is_distributed_as_p1(runs):
    seconds = [emitted(o)[1] for o in runs if o["acceptance_count"] >= 1]
    assert len(seconds) > 0.55 * N  # about beta_0 N = 12000 calls
    assert max_z(seconds, P[1]) < Z_MAX


@pytest.mark.slow
def test_bonus_after_all_accepted_is_distributed_as_p3(runs):
    # Edge case: token 1 has p_3 = 0, so it must never appear (max_z returns inf if it does).
    bonuses = [o["bonus_token"] for o in runs if o["acceptance_count"] == 3]
    assert max_z(bonuses, P[3]) < Z_MAX


@pytest.mark.slow
def test_accepted_count_matches_product_of_acceptance_rates(runs):
    for i, q in enumerate(Q):  # the hand-worked betas above, recomputed
        assert sum(min(a, b) for a, b in zip(P[i], q)) == pytest.approx(BETAS[i])
    assert max_z([o["acceptance_count"] for o in runs], COUNT_PROBS) < Z_MAX


@pytest.mark.slow
def test_tolerance_has_power(runs):
    # The same test must reject a wrong answer: the first token compared with q_0 instead of p_0.
    assert max_z([emitted(o)[0] for o in runs], Q[0]) > 10 * Z_MAX


# ---- determinism and rng types ----

CASE = ([0, 1, 2], Q, P)  # acceptance ratios 0.25, 0.4, 0.667: every count 0..3 can occur


def test_same_int_seed_same_output_and_equals_random_random():
    for seed in range(50):
        a = speculative_sample(*CASE, rng=seed)
        assert a == speculative_sample(*CASE, rng=seed)
        assert a == speculative_sample(*CASE, rng=random.Random(seed))  # an int seeds a fresh Random


def test_different_seeds_differ_somewhere():
    outputs = {repr(speculative_sample(*CASE, rng=seed)) for seed in range(200)}
    assert len(outputs) > 5


def test_random_instance_is_used_as_is_and_advances():
    rng = random.Random(3)
    assert make_rng(rng) is rng
    before = rng.getstate()
    first = speculative_sample(*CASE, rng=rng)
    assert rng.getstate() != before  # the caller's generator moved on
    second = speculative_sample(*CASE, rng=rng)
    twin = random.Random(3)  # the same two calls on a twin generator give the same two outputs
    assert [first, second] == [speculative_sample(*CASE, rng=twin), speculative_sample(*CASE, rng=twin)]


@pytest.mark.parametrize("kwargs", [{"rng": None}, {}])  # explicit None, and the default
def test_none_draws_fresh_entropy(kwargs):
    for _ in range(20):
        out = speculative_sample(*CASE, **kwargs)
        n = out["acceptance_count"]
        assert out["accepted_tokens"] == CASE[0][:n]  # a prefix of the draft
        assert out["bonus_token"] in range(4)
        if n == 3:  # all accepted: the bonus is drawn from p_3, where token 1 has no mass
            assert P[3][out["bonus_token"]] > 0


@pytest.mark.parametrize("bad", ["abc", 1.5, True, [1, 2]])  # str, float, bool (an int subclass), list
def test_bad_rng_raises_type_error(bad):
    with pytest.raises(TypeError, match="rng must be"):
        speculative_sample(*CASE, rng=bad)


# ---- validation shared with the graded function ----

@pytest.mark.parametrize("tokens, q, p", [
    ([0, 1], [[0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]),               # len(draft_probs) != K
    ([0, 1], [[0.5, 0.5]] * 2, [[0.5, 0.5]]),                       # target shorter than K
    ([2], [[0.5, 0.5]], [[0.5, 0.5]]),                               # token outside the vocabulary
    ([1], [[1.0, 0.0]], [[0.5, 0.5]]),                               # q(x) = 0 for the drafted x
    ([0], [[0.5, 0.7]], [[0.5, 0.5]]),                               # draft row sums to 1.2
    ([0], [[0.5, 0.5]], [[1.5, -0.5]]),                              # negative target entry
    ([0], [[0.5, 0.25, 0.25]], [[0.5, 0.5]]),                        # ragged: 3 vs 2 entries
    ([True], [[0.5, 0.5]], [[0.5, 0.5]]),                            # bool token id
    ("ab", [[0.5, 0.5]] * 2, [[0.5, 0.5]] * 2),                      # tokens as a string
])
def test_same_errors_as_graded_function(tokens, q, p):
    with pytest.raises((ValueError, TypeError)) as graded:
        verify_speculative_tokens(tokens, q, p, [0.5] * len(tokens))
    with pytest.raises(graded.type) as sampled:
        speculative_sample(tokens, q, p, rng=0)
    assert str(sampled.value) == str(graded.value)


def test_length_mismatch_message_names_both_arguments():
    with pytest.raises(ValueError, match=r"len\(draft_probs\) is 1 but len\(draft_tokens\) is 2"):
        speculative_sample([0, 1], [[0.5, 0.5]], [[0.5, 0.5]] * 3, rng=0)


# ---- edge cases ----

def test_p_equal_q_always_accepts():
    # Edge case: ratio 1 and u < 1, so every draft is accepted; the bonus comes from p_K.
    p = [[0.2, 0.3, 0.5], [0.6, 0.2, 0.2], [0.0, 0.0, 1.0]]
    rng = random.Random(11)
    for tokens in ([0, 1], [2, 2], [1, 0]):
        for _ in range(200):
            assert speculative_sample(tokens, p[:2], p, rng) == {
                "accepted_tokens": tokens, "bonus_token": 2, "acceptance_count": 2}


@pytest.mark.slow
def test_disjoint_supports_always_reject_and_correct_from_p():
    # Edge case: p(x) = 0 for every x the draft can propose, so the residual max(0, p - q) is p itself.
    q, p = [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.3, 0.7]
    rng, draws = random.Random(5), random.Random(6)
    corrections = []
    for _ in range(5000):
        out = speculative_sample([draws.randrange(2), 0], [q, q], [p, p, p], rng)
        assert out["acceptance_count"] == 0 and out["accepted_tokens"] == []
        corrections.append(out["bonus_token"])
    assert max_z(corrections, p) < Z_MAX  # also: tokens 0 and 1 (zero mass) never appear


def test_zero_target_mass_never_accepted_even_at_u_zero():
    # Edge case, strict <: with u = 0 the graded rule (u <= p/q) accepts a token with p(x) = 0;
    # the sampler (u < p/q) never does, because P(u < 0) = 0.
    q, p = [[0.5, 0.5]], [[0.0, 1.0]]
    assert verify_speculative_tokens([0], q, p, [0.0])["acceptance_count"] == 1
    assert speculative_sample([0], q, p, FixedRandom(0.0)) == {
        "accepted_tokens": [], "bonus_token": 1, "acceptance_count": 0}


def test_boundary_u_equal_ratio_rejects():
    # Hand-worked: p(0)/q(0) = 0.4 / 0.8 = 0.5; u = 0.5 is not < 0.5, so rejected. The residual is
    # max(0, [0.4 - 0.8, 0.6 - 0.2]) = [0, 0.4] -> [0, 1]: the correction is token 1.
    out = speculative_sample([0], [[0.8, 0.2]], [[0.4, 0.6]], FixedRandom(0.5))
    assert out == {"accepted_tokens": [], "bonus_token": 1, "acceptance_count": 0}
    out = speculative_sample([0], [[0.8, 0.2]], [[0.4, 0.6]], FixedRandom(0.4999))  # just below: accepted
    assert out["accepted_tokens"] == [0]


def test_k_zero_without_bonus_row():
    # Edge case: K = 0 and no target row: nothing to verify, nothing to emit.
    assert speculative_sample([], [], [], rng=0) == {"accepted_tokens": [], "bonus_token": None, "acceptance_count": 0}


def test_k_zero_with_bonus_row_samples_p():
    # Edge case: K = 0 with one target row: the call is one draw from p_0.
    p = [0.1, 0.0, 0.6, 0.3]
    rng = random.Random(9)
    bonuses = []
    for _ in range(5000):
        out = speculative_sample([], [], [p], rng)
        assert out["accepted_tokens"] == [] and out["acceptance_count"] == 0
        bonuses.append(out["bonus_token"])
    assert max_z(bonuses, p) < Z_MAX


@pytest.mark.parametrize("u, expected", [
    (0.0, 1),          # first index with mass, not the zero-mass index 0
    (0.2499, 1),       # 0.2499 < 0.25
    (0.25, 3),         # cumulative 0.25 is not > 0.25: next positive index (2 has no mass)
    (0.9999, 4),
    (1.0, 4),          # stands in for float rounding leaving the running sum below u: last positive index,
])                     # not the trailing zero-mass index 5
def test_sample_from_inverts_the_cdf_and_skips_zero_mass(u, expected):
    row = [0.0, 0.25, 0.0, 0.5, 0.25, 0.0]  # cumulative over positive entries: 0.25, 0.75, 1.0
    assert sample_from(row, FixedRandom(u)) == expected


@pytest.mark.slow
@settings(max_examples=300)
@given(st.lists(st.sampled_from([0.0, 0.0, 1e-300, 1e-9, 0.1, 0.3, 1.0, 7.0]), min_size=1, max_size=8)
       .filter(lambda row: sum(row) > 0),
       st.floats(min_value=0.0, max_value=1.0))
def test_sample_from_never_returns_zero_mass(row, u):
    # Property: whatever the row (unnormalised, tiny entries, many zeros) and u in [0, 1], the index has mass.
    assert row[sample_from(row, FixedRandom(u))] > 0.0
