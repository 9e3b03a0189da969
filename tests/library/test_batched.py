"""Tests for the NumPy batch verifiers `verify_batch` and `sample_batch` on probabilities (specdec/batched/),
ragged drafts, per-row seeds, the naive baseline and the batched draw. Logits: test_batched_logits.py;
the ported vLLM and FlashInfer suites: test_batched_peer_suites.py.

References, none of them the code under test (tests/references.py):
- the plain graded `verify_speculative_tokens`, row by row, on hypothesis-generated batches
  (exact equality, float32 and float64), ragged rows on their real prefix;
- the sampled rule written in plain Python, fed the same per-row uniforms (exact equality);
- SplitMix64 in Python integers, and the reference outputs published on Rosetta Code;
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
from helpers import max_z
from references import plain_verify_row, row_uniform, sampled_row, splitmix64
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec import verify_speculative_tokens
from specdec.batched.rules import draw_rows
from specdec.batched import sample_batch, verify_batch
from specdec.batched.naive import naive_verify_batch
from specdec.batched.seeds import row_uniforms

Z_MAX = 4.5


def real_prefix(tokens, b):
    """k_b: the number of drafts of row b before its first placeholder -1."""
    row = list(tokens[b])
    return row.index(-1) if -1 in row else len(row)


def plain_rows(tokens, q, p, u):
    """The reference: verify_speculative_tokens on each row's real prefix (target rows 0..k_b), bonus None -> -1."""
    counts, bonuses = [], []
    has_bonus = p.shape[1] > tokens.shape[1]
    for b in range(len(tokens)):
        k = real_prefix(tokens, b)
        rows = p.shape[1] if k == tokens.shape[1] else k + has_bonus   # a dense row keeps its extra rows
        count, bonus = plain_verify_row(tokens[b, :k].tolist(), q[b, :k].tolist(), p[b, :rows].tolist(),
                                        u[b, :k].tolist())
        counts.append(count)
        bonuses.append(bonus)
    return counts, bonuses


def normalise(weights):
    """Integer weights [..., V] -> float64 rows summing to 1 (small integers make exact ties and zeros)."""
    weights = np.asarray(weights, dtype=np.float64)
    return weights / weights.sum(axis=-1, keepdims=True)


@st.composite
def batches(draw, dtype, ragged=False):
    """A valid batch: B 1..6, K 0..5, V 1..8, with or without the bonus row, rows from weights 0..3.

    ragged: some rows end early with placeholders -1; their padding (draft rows, uniforms and target
    rows after the row's bonus row) is NaN, which must never be read.
    """
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
    if ragged:
        for i in range(b):
            kb = draw(st.integers(0, k))
            tokens[i, kb:] = -1
            q[i, kb:] = u[i, kb:] = np.nan
            if kb < k:                                             # a dense row keeps all its target rows
                p[i, kb + (rows > k):] = np.nan
    return tokens, q, p, u.astype(dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=150)
@given(data=st.data())
def test_verify_batch_equals_plain_rule_row_by_row(dtype, data):
    tokens, q, p, u = data.draw(batches(dtype, ragged=data.draw(st.booleans())))
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


@pytest.mark.slow
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
    (changed(draft_tokens=np.array([[0, 2]])), ValueError,
     r"draft_tokens\[0, 1\] is 2, outside the vocabulary \[0, 2\)"),
    (changed(draft_tokens=np.array([[-1, 0]])), ValueError, r"draft_tokens\[0, 1\] is 0 after the placeholder -1"),
    (changed(draft_probs=np.array([[[0.5, 0.5]]])), ValueError, r"draft_probs has shape \(1, 1, 2\)"),  # K rows
    (changed(target_probs=np.array([[[0.5, 0.5]]])), ValueError, r"target_probs has shape \(1, 1, 2\)"),  # < K
    (changed(target_probs=np.full((1, 2, 3), 1 / 3)), ValueError, r"target_probs has shape \(1, 2, 3\)"),  # V
    (changed(draft_probs=np.array([[[0.5, 0.5], [2.0, 0.5]]])), ValueError, r"draft_probs\[0, 1\] sums to 2.5, not 1"),
    (changed(draft_probs=np.array([[[0.5, 0.5], [1.5, -0.5]]])), ValueError,
     r"draft_probs\[0, 1, 1\] is -0.5, a negative"),
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


# --- ragged drafts: -1 marks "no draft here", only at the end of a row -----------------------------

def test_ragged_rows_are_verified_on_their_real_prefix():
    """Hand-worked: rows with 2, 1 and 0 drafts in one [3, 2] batch; padding holds NaN and is never read.

    Row 0 (dense): seed example 1, both accepted, bonus argmax [0.5, 0.3, 0.2] = 0.
    Row 1 (x = [2, -1]): 0.4 <= 0.8 / 0.7 accepts; its bonus row is target row 1, argmax [0.1, 0.7, 0.2] = 1.
    Row 2 (x = [-1, -1]): nothing to verify; the bonus is argmax of target row 0, [0.2, 0.3, 0.5] -> 2.
    """
    nan3 = [np.nan] * 3
    tokens = np.array([[2, 1], [2, -1], [-1, -1]])
    q = np.array([[[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]], [[0.1, 0.2, 0.7], nan3], [nan3, nan3]])
    p = np.array([[[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]],
                  [[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], nan3],
                  [[0.2, 0.3, 0.5], nan3, nan3]])
    u = np.array([[0.5, 0.4], [0.4, np.nan], [np.nan, np.nan]])
    out = verify_batch(tokens, q, p, u)
    assert out["acceptance_count"].tolist() == [2, 1, 0] and out["bonus_token"].tolist() == [0, 1, 2]
    assert plain_rows(tokens, q, p, u) == ([2, 1, 0], [0, 1, 2])    # the plain rule on each real prefix
    no_bonus = verify_batch(tokens, q, p[:, :2], u)                 # K target rows: no row has a bonus row
    assert no_bonus["bonus_token"].tolist() == [-1, -1, -1]


def test_ragged_rows_validate_only_what_they_use():
    """A ragged row's bonus row is checked; its padding is not. Placeholders in the middle are refused."""
    tokens = np.array([[0, -1]])
    q, p = np.array([[[0.5, 0.5], [9.0, 9.0]]]), np.array([[[0.5, 0.5], [2.0, 0.0], [9.0, 9.0]]])
    with pytest.raises(ValueError, match=r"target_probs\[0, 1\] sums to 2, not 1"):
        verify_batch(tokens, q, p, [[0.5, 7.0]])                    # row 1 is the bonus row of a 1-draft row
    p[0, 1] = [1.0, 0.0]
    assert verify_batch(tokens, q, p, [[0.5, 7.0]])["bonus_token"].tolist() == [0]
    with pytest.raises(ValueError, match=r"draft_tokens\[0, 2\] is 1 after the placeholder -1 at draft_tokens\[0, 1\]"):
        verify_batch([[0, -1, 1]], np.full((1, 3, 2), 0.5), np.full((1, 4, 2), 0.5), np.zeros((1, 3)))
    with pytest.raises(ValueError,
                       match=r"draft_tokens\[0, 0\] is -2, outside the vocabulary \[0, 2\) \(-1 is the only"):
        verify_batch([[-2]], np.full((1, 1, 2), 0.5), np.full((1, 2, 2), 0.5), np.zeros((1, 1)))


# --- per-row seeds: a row's draws depend on its seed only ----------------------------------------

def test_row_uniforms_are_splitmix64_as_documented():
    """The vectorised streams equal the documented formula computed with Python integers, and SplitMix64 itself
    matches the reference outputs for seed 1234567 (https://rosettacode.org/wiki/Pseudo-random_numbers/Splitmix64)."""
    assert splitmix64(1234567, 5) == [6457827717110365317, 3203168211198807973, 9817491932198370423,
                                      4593380528125082431, 16408922859458223821]
    seeds = [0, 1, 7, 2**32 + 5, 2**63, 2**64 - 1]
    pairs = [(s, t) for s in seeds for t in (0, 1, 2**64 - 1)]
    got = row_uniforms(np.array(pairs, dtype=np.uint64), 4)
    assert got.tolist() == [[row_uniform(s, t, j) for j in range(4)] for s, t in pairs]
    assert row_uniforms(np.array(seeds, dtype=np.uint64), 4).tolist() == got[::3].tolist()   # s means (s, 0)


def test_row_uniforms_look_uniform_and_independent():
    """20 bins of 100,000 draws (5 slots of 20,000 consecutive seeds) against 1/20 each; and the correlation of
    neighbouring seeds' draws within 4.5 standard errors (1 / sqrt(n)) of 0."""
    u = row_uniforms(np.arange(20_000), 5)                          # [20000, 5]
    assert ((u >= 0) & (u < 1)).all()
    assert max_z((u * 20).astype(np.int64).ravel(), np.full(20, 0.05)) < Z_MAX
    for a, b in ((u[:-1, 0], u[1:, 0]), (u[:, 0], u[:, 1])):       # seed s vs s + 1; slot 0 vs slot 1
        assert abs(np.corrcoef(a, b)[0, 1]) < Z_MAX / np.sqrt(len(a))


def random_ragged_batch(rng, b, k, v, dtype=np.float64):
    """Dirichlet rows, drafts x ~ q, k_b uniform in 0..k with -1 padding (zeros in the padding rows)."""
    p = rng.dirichlet(np.ones(v), size=(b, k + 1)).astype(dtype)
    q = rng.dirichlet(np.ones(v) * 0.5, size=(b, k)).astype(dtype)
    tokens = (q.cumsum(-1) < rng.random((b, k, 1))).sum(-1).clip(max=v - 1)
    for i, kb in enumerate(rng.integers(0, k + 1, b)):
        tokens[i, kb:] = -1
        q[i, kb:] = 0.0
        p[i, kb + 1:] = 0.0
    return tokens, q, p


def test_sample_batch_with_row_seeds_equals_the_plain_sampled_rule():
    """Row b with seed s draws u(s, 0..k_b - 1) to accept and u(s, k_b) for its correction or bonus, exactly
    as the plain sampled rule fed the same uniforms decides (ragged rows, float64)."""
    rng = np.random.default_rng(4)
    for trial in range(40):
        tokens, q, p = random_ragged_batch(rng, 6, int(rng.integers(1, 5)), int(rng.integers(2, 9)))
        seeds = rng.integers(0, 2**63, len(tokens))
        out = sample_batch(tokens, q, p, seeds)
        for b in range(len(tokens)):
            k = real_prefix(tokens, b)
            uniforms = [row_uniform(int(seeds[b]), 0, j) for j in range(k + 1)]
            count, bonus, _ = sampled_row(tokens[b, :k].tolist(), q[b, :k].tolist(), p[b, :k + 1].tolist(), uniforms)
            assert (out["acceptance_count"][b], out["bonus_token"][b]) == (count, bonus)


@pytest.mark.slow
@pytest.mark.parametrize("from_logits", [False, True])
def test_a_row_with_its_own_seed_does_not_depend_on_its_batch(from_logits):
    """Batch independence: row 0's result with seed s, alone, first, last and among 255 other rows
    (random other rows and seeds), for 300 seeds: identical every time. Ragged rows included (the batch pads them)."""
    rng = np.random.default_rng(5)
    others = random_ragged_batch(rng, 255, 4, 8)
    other_seeds = rng.integers(0, 2**63, 255)
    changed_rows = 0
    for s in range(300):
        row = random_ragged_batch(rng, 1, int(rng.integers(1, 5)), 8)
        k = row[0].shape[1]
        pad = [np.concatenate([row[0], -np.ones((1, 4 - k), np.int64)], 1),  # the row padded to K = 4
               np.concatenate([row[1], np.zeros((1, 4 - k, 8))], 1),
               np.concatenate([row[2], np.zeros((1, 4 - k, 8))], 1)]
        def run(parts, seeds):
            t, q, p = (np.concatenate(x) for x in zip(*parts))
            if from_logits:
                with np.errstate(divide="ignore"):
                    q, p = np.log(q), np.log(p)
                q[t == -1], p[:, 1:][t == -1] = 0.0, 0.0             # padding: any finite value
            out = sample_batch(t, q, p, np.array(seeds, np.uint64), from_logits=from_logits)
            return out["acceptance_count"], out["bonus_token"]
        alone = run([row], [s])
        first = run([pad, others], [s, *other_seeds])
        last = run([others, pad], [*other_seeds, s])
        for count, bonus in ((first[0][0], first[1][0]), (last[0][-1], last[1][-1])):
            changed_rows += (count, bonus) != (alone[0][0], alone[1][0])
    assert changed_rows == 0


def test_a_shared_generator_makes_rows_depend_on_their_batch():
    """The contrast (why per-row seeds exist): with one Generator, row 0's draws shift when rows join the batch."""
    rng = np.random.default_rng(6)
    others = random_ragged_batch(rng, 255, 4, 8)
    changed_rows = 0
    for s in range(100):
        t, q, p = random_ragged_batch(rng, 1, 4, 8)
        alone = sample_batch(t, q, p, s)
        last = sample_batch(*(np.concatenate([o, x]) for o, x in zip(others, (t, q, p))), s)
        changed_rows += (alone["acceptance_count"][0], alone["bonus_token"][0]) != \
                        (last["acceptance_count"][-1], last["bonus_token"][-1])
    assert changed_rows > 50                                         # most seeds: a different row 0


@pytest.mark.parametrize("rng, error, match", [
    (np.array([1, -2]), ValueError, r"rng\[1\] is -2: seeds must be >= 0"),
    (np.array([[1, 0], [3, -1]]), ValueError, r"rng\[1, 1\] is -1: seeds must be >= 0"),
    (np.array([1, 2, 3]), TypeError, r"per-row seeds must be integers of shape \(2,\) or \(2, 2\)"),
    (np.array([0.5, 1.0]), TypeError, r"per-row seeds must be integers .* dtype float64"),
    ("seed", TypeError, r"rng must be a numpy.random.Generator, an int seed, or per-row seeds"),
    (np.random.RandomState(0), TypeError, r"rng must be a numpy.random.Generator"),
])
def test_bad_seeds_are_refused(rng, error, match):
    with pytest.raises(error, match=match):
        sample_batch(np.zeros((2, 1), np.int64), np.full((2, 1, 2), 0.5), np.full((2, 2, 2), 0.5), rng)


def test_seed_steps_give_new_draws():
    """(s, 0) is s; (s, 1) is another stream; the same (seed, step) gives the same output."""
    tokens, q, p = draft_batch(7, n=2000)
    seeds = np.arange(2000)
    steps = np.stack([seeds, np.ones_like(seeds)], axis=1)
    a, b, c = sample_batch(tokens, q, p, seeds), sample_batch(tokens, q, p, steps), sample_batch(tokens, q, p, steps)
    assert a["bonus_token"].tolist() != b["bonus_token"].tolist()
    assert b["bonus_token"].tolist() == c["bonus_token"].tolist()
    assert sample_batch(tokens, q, p, np.stack([seeds, 0 * seeds], 1))["bonus_token"].tolist() == \
        a["bonus_token"].tolist()


def test_sample_batch_with_row_seeds_is_lossless():
    """40,000 rows with seeds 0..N-1: the first emitted token is distributed as p_0 (the per-row streams feed it)."""
    tokens, q, p = draft_batch(8)
    out = sample_batch(tokens, q, p, np.arange(N))
    assert max_z(first_token(tokens, out), P[0]) < Z_MAX
    assert max_z(out["acceptance_count"], COUNT_PROBS) < Z_MAX


# --- the naive baseline and the batched draw -------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_naive_baseline_equals_verify_batch(dtype):
    """On random Dirichlet rows (no near-ties) the residual-at-every-position baseline gives the same answers."""
    for seed in range(30):
        rng = np.random.default_rng(seed)
        tokens, q, p, u = make_rows(seed, int(rng.integers(1, 9)), int(rng.integers(0, 6)), int(rng.integers(1, 60)),
                                    dtype=dtype)
        out, naive = verify_batch(tokens, q, p, u), naive_verify_batch(tokens, q, p, u)
        assert out["acceptance_count"].tolist() == naive[0].tolist()
        assert out["bonus_token"].tolist() == naive[1].tolist()


def test_naive_baseline_rounds_where_verify_batch_replays():
    """The documented difference: the float32 near-tie above (plain rule: 1) is a tie for the naive version (0)."""
    p = np.array([[[0.38169464468955994, 0.38186877965927124, 0.23643657565116882]]], np.float32)
    q = np.array([[[0.0022637597285211086, 0.00243788561783731, 0.9952983260154724]]], np.float32)
    assert naive_verify_batch(np.array([[2]]), q, p, np.ones((1, 1)))[1].tolist() == [0]
    assert verify_batch([[2]], q, p, np.ones((1, 1)))["bonus_token"].tolist() == [1]


def test_two_level_draw_equals_one_running_sum():
    """Rows longer than one block (2048): the two-level draw picks the index a single float64 running sum picks,
    never a zero-weight token (half the weights are 0, and a whole block is empty)."""
    rng = np.random.default_rng(9)
    for trial in range(40):
        v = int(rng.integers(2049, 9000))
        w = (rng.random((16, v)) ** 8).astype(np.float32)
        w[rng.random((16, v)) < 0.5] = 0.0
        w[:, 2048:4096] = 0.0
        u = rng.random(16)
        u[:2] = 0.0, 1.0 - 2.0 ** -53                               # the extremes of U[0, 1)
        cdf = np.cumsum(w.astype(np.float64), axis=1)
        expect = [int(np.searchsorted(c, x * c[-1], side="right")) for c, x in zip(cdf, u)]
        got = draw_rows(w, u)
        assert got.tolist() == expect and (w[np.arange(16), got] > 0).all()
        assert got[0] == np.flatnonzero(w[0])[0]                    # u = 0: the first token with mass
