"""Tests for the NumPy batch versions `verify_batch` and `sample_batch` (specdec/batched.py).

References, none of them the code under test:
- the plain graded `verify_speculative_tokens`, row by row, on hypothesis-generated batches
  (exact equality, float32 and float64);
- hand-worked cases with the arithmetic in the docstring;
- for the lossless `sample_batch`: the target rows p and the product of per-position acceptance
  rates beta_i = sum_x min(p_i(x), q_i(x)), by fixed-seed Monte Carlo.

Statistical tolerance: per bin, z = |count - n p| / sqrt(n p (1 - p)) must stay below 4.5 (a false alarm
has probability ~7e-6 per bin under a correct sampler; the seeds are fixed, so the outcome is reproducible).
A wrong rule moves some bin by >= 0.05, more than 10 sigma at n = 40_000: `test_tolerance_has_power`
checks that the same statistic rejects q in place of p.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec import verify_speculative_tokens
from specdec.batched import sample_batch, verify_batch

Z_MAX = 4.5


def plain_rows(tokens, q, p, u):
    """The reference: verify_speculative_tokens on each row b, bonus None mapped to -1."""
    counts, bonuses = [], []
    for b in range(len(tokens)):
        out = verify_speculative_tokens(tokens[b].tolist(), q[b].tolist(), p[b].tolist(), u[b].tolist())
        assert out["accepted_tokens"] == tokens[b, :out["acceptance_count"]].tolist()  # accepted = the first n drafts
        counts.append(out["acceptance_count"])
        bonuses.append(-1 if out["bonus_token"] is None else out["bonus_token"])
    return counts, bonuses


def normalise(weights):
    """Integer weights [..., V] -> float64 rows summing to 1 (small integers make exact ties and zeros)."""
    weights = np.asarray(weights, dtype=np.float64)
    return weights / weights.sum(axis=-1, keepdims=True)


@st.composite
def batches(draw, dtype):
    """A valid batch: B 1..6, K 0..5, V 1..8, with or without the bonus row, rows from weights 0..3."""
    b, k, v = draw(st.integers(1, 6)), draw(st.integers(0, 5)), draw(st.integers(1, 8))
    rows = k + draw(st.integers(0, 1))                             # the bonus row K or not
    def weights(n_rows):
        n = b * n_rows * v
        flat = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        w = np.array(flat, dtype=np.int64).reshape(b, n_rows, v)
        w[..., 0] += w.sum(axis=-1) == 0                           # every row needs some mass
        return w
    p = normalise(weights(rows)).astype(dtype)                     # [B, K(+1), V]
    q = normalise(weights(k)).astype(dtype)                        # [B, K, V]
    # Edge case: q = p scaled by 1 + 5e-5 (still a distribution within 1e-4): p(x)/q(x) < 1, so
    # u = 1 rejects, and max(0, p - q) has no mass there: the fallback to p.
    copy = np.array(draw(st.lists(st.integers(0, 4), min_size=b * k, max_size=b * k))).reshape(b, k) == 4  # ~1 in 5
    q[copy] = p[:, :k][copy] * dtype(1 + 5e-5)
    tokens = np.zeros((b, k), np.int64)
    u = np.zeros((b, k), np.float64)
    for i in range(b):
        for j in range(k):
            x = draw(st.sampled_from(np.flatnonzero(q[i, j]).tolist()))  # the draft proposes only q > 0
            tokens[i, j] = x
            ratio = min(1.0, float(p[i, j, x]) / float(q[i, j, x]))
            # Edge cases: u exactly on the boundary p/q (accepted under <=), 0, 1, or anywhere.
            u[i, j] = draw(st.one_of(st.just(ratio), st.just(0.0), st.just(1.0), st.floats(0.0, 1.0)))
    return tokens, q, p, u.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=150)
@given(data=st.data())
def test_verify_batch_equals_plain_rule_row_by_row(dtype, data):
    tokens, q, p, u = data.draw(batches(dtype))
    out = verify_batch(tokens, q, p, u)
    counts, bonuses = plain_rows(tokens, q, p, u)
    assert out["acceptance_count"].tolist() == counts
    assert out["bonus_token"].tolist() == bonuses
    assert out["acceptance_count"].dtype == np.int64 and out["bonus_token"].dtype == np.int64


def test_seed_examples_as_a_batch():
    """Seed example 1 (all accepted, bonus argmax [0.5, 0.3, 0.2] = 0) next to a rejection.

    Row 1: 0.5 > p(0)/q(0) = 0.2 / 0.8 = 0.25 rejects at position 0; max(0, p - q) = [0, 0.6, 0] -> 1.
    """
    tokens = [[2, 1], [0, 0]]
    q = [[[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]], [[0.8, 0.2, 0.0], [0.5, 0.5, 0.0]]]
    p = [[[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], [[0.2, 0.8, 0.0], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]]
    out = verify_batch(tokens, q, p, [[0.5, 0.4], [0.5, 0.5]])   # plain lists are accepted too
    assert out["acceptance_count"].tolist() == [2, 0]
    assert out["bonus_token"].tolist() == [0, 1]


def test_seed_example_2_has_no_bonus_row():
    """Seed example 2: 0.5 <= 0.9/0.8 and 0.8 <= 0.9/0.1, both accepted; target has no row K = 2: bonus -1."""
    out = verify_batch(np.array([[0, 1]]), np.array([[[0.8, 0.2], [0.9, 0.1]]]),
                       np.array([[[0.9, 0.1], [0.1, 0.9]]]), np.array([[0.5, 0.8]]))
    assert out["acceptance_count"].tolist() == [2] and out["bonus_token"].tolist() == [-1]


def test_near_tie_in_the_residual_follows_the_plain_division():
    """Subtle: excesses 1 ulp apart tie after the plain rule divides by the mass.

    p = [0.21 - 1 ulp, 0.21, 0.18, 0.40], q = [0, 0, 0, 1], draft 3, u = 1 > 0.40: rejected.
    max(0, p - q) = [0.21 - 1 ulp, 0.21, 0.18, 0], whose argmax is 1, but divided by the mass 0.60
    (math.fsum, the same on every Python) entries 0 and 1 round to the same float, and the tie goes to
    the lower index: the plain rule says 0.
    """
    e0 = float(np.nextafter(0.21, 0.0))
    p = [e0, 0.21, 0.18, 1.0 - e0 - 0.21 - 0.18]
    q = [0.0, 0.0, 0.0, 1.0]
    assert verify_speculative_tokens([3], [q], [p], [1.0])["bonus_token"] == 0   # the reference
    out = verify_batch(np.array([[3]]), np.array([[q]]), np.array([[p]]), np.array([[1.0]]))
    assert out["bonus_token"].tolist() == [0]


def test_float32_excess_rounding_follows_the_plain_rule():
    """Subtle: in float32, p - q can round the two largest excesses into a tie.

    In float64 (the plain rule converts to Python floats) p1 - q1 = 0.37943089404 exceeds
    p0 - q0 = 0.37943088496 by 9.1e-9; float32 subtraction rounds both to 0.3794309, and the tie
    goes to the lower index, so argmax of the float32 excess would say 0. The plain rule says 1.
    """
    p = np.array([[[0.38169464468955994, 0.38186877965927124, 0.23643657565116882]]], np.float32)
    q = np.array([[[0.0022637597285211086, 0.00243788561783731, 0.9952983260154724]]], np.float32)
    assert int(np.argmax(np.maximum(p[0, 0] - q[0, 0], 0))) == 0                       # the float32 trap
    assert verify_speculative_tokens([2], q[0].tolist(), p[0].tolist(), [1.0])["bonus_token"] == 1  # reference
    assert verify_batch([[2]], q, p, np.ones((1, 1), np.float32))["bonus_token"].tolist() == [1]


def test_empty_batch_and_empty_draft():
    """Edge cases: B = 0 returns empty arrays; K = 0 gives the target's argmax, or -1 without a row."""
    out = verify_batch(np.zeros((0, 2), np.int64), np.zeros((0, 2, 3)), np.zeros((0, 3, 3)), np.zeros((0, 2)))
    assert out["acceptance_count"].tolist() == [] and out["bonus_token"].tolist() == []
    out = verify_batch([[], []], np.zeros((2, 0, 3)), [[[0.2, 0.5, 0.3]], [[0.4, 0.2, 0.4]]], [[], []])
    assert out["acceptance_count"].tolist() == [0, 0] and out["bonus_token"].tolist() == [1, 0]  # 0.4 tie -> 0
    out = verify_batch([[]], np.zeros((1, 0, 3)), np.zeros((1, 0, 3)), [[]])
    assert out["bonus_token"].tolist() == [-1]


def test_extra_target_rows_are_ignored_like_the_plain_rule():
    """Edge case: target_probs with K + 3 rows; only rows 0..K are read (the extra ones are validated)."""
    tokens, q, p, u = make_rows(seed=5, b=4, k=3, v=6, extra=3)
    out = verify_batch(tokens, q, p, u)
    counts, bonuses = plain_rows(tokens, q, p, u)
    assert out["acceptance_count"].tolist() == counts and out["bonus_token"].tolist() == bonuses
    p[0, -1] = 2.0                                                  # a bad unused row is still refused
    with pytest.raises(ValueError, match=r"target_probs\[0, 5\] sums to 12"):
        verify_batch(tokens, q, p, u)


def make_rows(seed, b, k, v, extra=1, dtype=np.float32):
    """Random Dirichlet rows (k + extra target rows), drafts x ~ q by inverse CDF, u ~ U[0, 1)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(v), size=(b, k + extra)).astype(dtype)  # [b, k + extra, v]
    q = rng.dirichlet(np.ones(v), size=(b, k)).astype(dtype)          # [b, k, v]
    tokens = (q.cumsum(-1) < rng.random((b, k, 1))).sum(-1).clip(max=v - 1)
    return tokens, q, p, rng.random((b, k))


def test_validate_false_gives_the_same_answer_on_good_input():
    tokens, q, p, u = make_rows(seed=3, b=8, k=4, v=20)             # K = 4 plus the bonus row
    full, fast = verify_batch(tokens, q, p, u), verify_batch(tokens, q, p, u, validate=False)
    counts, bonuses = plain_rows(tokens, q, p, u)
    assert full["acceptance_count"].tolist() == fast["acceptance_count"].tolist() == counts
    assert full["bonus_token"].tolist() == fast["bonus_token"].tolist() == bonuses


# --- sample_batch: lossless, checked statistically ------------------------------------------------

# Three drafted positions over V = 4 (hand-worked acceptance rates), p_3 the bonus row.
Q = np.array([[0.40, 0.30, 0.20, 0.10],
              [0.25, 0.25, 0.25, 0.25],
              [0.30, 0.30, 0.30, 0.10]])
P = np.array([[0.10, 0.20, 0.30, 0.40],   # beta_0 = 0.1 + 0.2 + 0.2 + 0.1  = 0.60
              [0.70, 0.10, 0.10, 0.10],   # beta_1 = 0.25 + 0.1 + 0.1 + 0.1 = 0.55
              [0.30, 0.30, 0.20, 0.20],   # beta_2 = 0.3 + 0.3 + 0.2 + 0.1  = 0.90
              [0.50, 0.00, 0.25, 0.25]])  # bonus row (token 1 has zero mass)
# P(n) = beta_0 ... beta_{n-1} (1 - beta_n); n = 3: the product of all three.
#   P(0) = 0.4, P(1) = 0.6 * 0.45 = 0.27, P(2) = 0.6 * 0.55 * 0.1 = 0.033, P(3) = 0.6 * 0.55 * 0.9 = 0.297
COUNT_PROBS = np.array([0.4, 0.27, 0.033, 0.297])
N = 40_000


def draft_batch(seed, n=N, dtype=np.float64):
    """n copies of the (Q, P) problem with drafts x_i ~ Q_i drawn by inverse CDF (not by the code under test)."""
    rng = np.random.default_rng(seed)
    tokens = (Q.cumsum(-1)[None] < rng.random((n, 3, 1))).sum(-1)  # [n, 3]
    return tokens, np.broadcast_to(Q.astype(dtype), (n, 3, 4)), np.broadcast_to(P.astype(dtype), (n, 4, 4))


def max_z(samples, probs):
    """Largest per-bin z-score of token ids `samples` against `probs`; a zero-mass bin hit is infinite."""
    n = len(samples)
    counts = np.bincount(samples, minlength=len(probs))
    z = [abs(c - n * pr) / np.sqrt(n * pr * (1 - pr)) if 0 < pr < 1 else (0.0 if c == n * pr else np.inf)
         for c, pr in zip(counts, probs)]
    return max(z)


def first_token(tokens, out):
    """The first token the step emits: draft 0 if accepted, else the correction."""
    return np.where(out["acceptance_count"] > 0, tokens[:, 0], out["bonus_token"])


@pytest.mark.parametrize("seed, dtype", [(0, np.float64), (1, np.float32)])
def test_sample_batch_first_token_is_distributed_as_p(seed, dtype):
    tokens, q, p = draft_batch(seed, dtype=dtype)
    out = sample_batch(tokens, q, p, np.random.default_rng(100 + seed))
    assert max_z(first_token(tokens, out), P[0]) < Z_MAX


def test_sample_batch_accepted_count_matches_product_of_acceptance_rates():
    tokens, q, p = draft_batch(2)
    out = sample_batch(tokens, q, p, np.random.default_rng(7))
    assert max_z(out["acceptance_count"], COUNT_PROBS) < Z_MAX


def test_sample_batch_bonus_after_full_acceptance_is_distributed_as_p_K():
    tokens, q, p = draft_batch(3)
    out = sample_batch(tokens, q, p, np.random.default_rng(8))
    bonus = out["bonus_token"][out["acceptance_count"] == 3]      # ~0.297 N of them
    assert max_z(bonus, P[3]) < Z_MAX                               # never token 1 (zero mass)


def test_sample_batch_correction_at_rejection_is_the_residual():
    """Rejected at position 0: the correction ~ normalize(max(0, p_0 - q_0)) = [0, 0, 0.1, 0.3] / 0.4."""
    tokens, q, p = draft_batch(4)
    out = sample_batch(tokens, q, p, np.random.default_rng(9))
    correction = out["bonus_token"][out["acceptance_count"] == 0]
    assert max_z(correction, [0.0, 0.0, 0.25, 0.75]) < Z_MAX


def test_tolerance_has_power():
    """The same statistic rejects the draft distribution q_0 as the law of the first token."""
    tokens, q, p = draft_batch(0)
    out = sample_batch(tokens, q, p, np.random.default_rng(100))
    assert max_z(first_token(tokens, out), Q[0]) > Z_MAX


def test_sample_batch_same_seed_same_output_and_int_seed():
    tokens, q, p = draft_batch(5, n=500)
    a = sample_batch(tokens, q, p, np.random.default_rng(11))
    b = sample_batch(tokens, q, p, 11)                               # an int seed builds the same Generator
    assert a["acceptance_count"].tolist() == b["acceptance_count"].tolist()
    assert a["bonus_token"].tolist() == b["bonus_token"].tolist()


def test_sample_batch_edge_cases():
    """Edge cases: p(x) = 0 is never accepted (strict <); no bonus row gives -1."""
    out = sample_batch([[0]] * 50, [[[0.5, 0.5]]] * 50, [[[0.0, 1.0]]] * 50, np.random.default_rng(0))
    assert out["acceptance_count"].tolist() == [0] * 50 and out["bonus_token"].tolist() == [1] * 50
    out = sample_batch([[1]] * 50, [[[0.5, 0.5]]] * 50, [[[0.5, 0.5]]] * 50, np.random.default_rng(0))
    assert out["acceptance_count"].tolist() == [1] * 50 and out["bonus_token"].tolist() == [-1] * 50


# Edge case: a residual with no mass. q = [9e-5, 0.5, 0.5] sums to 1.00009 (within the 1e-4 tolerance);
# p = [0, 0.5, 0.5]. Drafting x = 0 with p(0) = 0 is always rejected (u <= 0 fails for u = 0.5), and
# max(0, p - q) = [0, 0, 0]: both versions fall back to p (argmax p = 1 by the lower-index tie-break).
NO_MASS = dict(draft_tokens=np.zeros((N, 1), np.int64), draft_probs=np.tile([[[9e-5, 0.5, 0.5]]], (N, 1, 1)),
               target_probs=np.tile([[[0.0, 0.5, 0.5]]], (N, 1, 1)))


def test_no_residual_mass_falls_back_to_p():
    assert verify_speculative_tokens([0], [[9e-5, 0.5, 0.5]], [[0.0, 0.5, 0.5]], [0.5])["bonus_token"] == 1
    out = verify_batch(**NO_MASS, random_samples=np.full((N, 1), 0.5))
    assert set(out["bonus_token"].tolist()) == {1} and set(out["acceptance_count"].tolist()) == {0}
    out = sample_batch(**NO_MASS, rng=np.random.default_rng(12))
    assert set(out["acceptance_count"].tolist()) == {0}
    assert max_z(out["bonus_token"], [0.0, 0.5, 0.5]) < Z_MAX       # sampled from p, never token 0


# --- validation: clear errors naming the argument and the position --------------------------------

GOOD = dict(draft_tokens=np.array([[0, 1]]), draft_probs=np.array([[[0.5, 0.5], [0.5, 0.5]]]),
            target_probs=np.array([[[0.5, 0.5], [0.5, 0.5], [1.0, 0.0]]]), random_samples=np.array([[0.1, 0.2]]))


def changed(**kwargs):
    return {**GOOD, **kwargs}


@pytest.mark.parametrize("kwargs, error, match", [
    (changed(draft_tokens=np.array([0, 1])), ValueError, r"draft_tokens must have shape \[B, K\]"),  # 1-D
    (changed(draft_tokens=np.array([[0.0, 1.0]])), TypeError, r"draft_tokens must hold integer token ids"),
    (changed(draft_tokens=np.array([[True, False]])), TypeError, r"draft_tokens .* dtype bool"),
    (changed(draft_tokens=np.array([[0, 2]])), ValueError, r"draft_tokens\[0, 1\] is 2, outside the vocabulary \[0, 2\)"),
    (changed(draft_tokens=np.array([[-1, 0]])), ValueError, r"draft_tokens\[0, 1\] is 0 after the placeholder -1"),
    (changed(draft_probs=np.array([[[0.5, 0.5]]])), ValueError, r"draft_probs has shape \(1, 1, 2\)"),  # K rows
    (changed(target_probs=np.array([[[0.5, 0.5]]])), ValueError, r"target_probs has shape \(1, 1, 2\)"),  # < K
    (changed(target_probs=np.full((1, 2, 3), 1 / 3)), ValueError, r"target_probs has shape \(1, 2, 3\)"),  # V
    (changed(draft_probs=np.array([[[0.5, 0.5], [2.0, 0.5]]])), ValueError, r"draft_probs\[0, 1\] sums to 2.5, not 1"),
    (changed(draft_probs=np.array([[[0.5, 0.5], [1.5, -0.5]]])), ValueError, r"draft_probs\[0, 1, 1\] is -0.5, a negative"),
    (changed(target_probs=np.array([[[0.5, 0.5], [np.nan, 0.5], [1.0, 0.0]]])), ValueError,
     r"target_probs\[0, 1, 0\] is nan: probabilities must be finite"),
    (changed(target_probs=np.array([[[0.5, 0.5], [0.5, 0.5], [3.0, 1.0]]])), ValueError,
     r"target_probs\[0, 2\] sums to 4"),                             # the bonus row is checked too
    (changed(draft_probs=np.array([[[0.5, 0.5], [1.0, 0.0]]])), ValueError,
     r"draft_probs\[0, 1, 1\] is 0 but draft_tokens\[0, 1\] is 1"),  # q(x) = 0
    (changed(draft_probs=np.array([[["a", "b"], ["c", "d"]]])), TypeError, r"draft_probs must hold real numbers"),
    (changed(draft_probs=[[[0.5, 0.5], [0.5]]]), ValueError, r"draft_probs is ragged"),
    (changed(random_samples=np.array([[0.1]])), ValueError, r"random_samples has shape \(1, 1\)"),
    (changed(random_samples=np.array([[0.1, 1.5]])), ValueError, r"random_samples\[0, 1\] is 1.5, outside \[0, 1\]"),
    (changed(random_samples=np.array([[np.nan, 0.1]])), ValueError, r"random_samples\[0, 0\] is nan"),
])
def test_verify_batch_rejects_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        verify_batch(**kwargs)


def test_first_bad_row_is_named_in_a_bigger_batch():
    """Row-major order: of the bad rows [2, 1] and [3, 0], [2, 1] is reported."""
    q = np.full((4, 2, 3), 1 / 3)
    q[2, 1] = [1.0, 1.0, 0.5]
    q[3, 0] = [2.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"draft_probs\[2, 1\] sums to 2.5, not 1"):
        verify_batch(np.zeros((4, 2), np.int64), q, np.full((4, 2, 3), 1 / 3), np.zeros((4, 2)))


def test_sample_batch_rejects_bad_input():
    kwargs = {k: v for k, v in GOOD.items() if k != "random_samples"}
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator"):
        sample_batch(**kwargs, rng=np.random.RandomState(0))
    with pytest.raises(ValueError, match=r"draft_probs\[0, 1\] sums to 2.5"):
        sample_batch(**{**kwargs, "draft_probs": np.array([[[0.5, 0.5], [2.0, 0.5]]])}, rng=0)
