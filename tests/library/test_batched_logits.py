"""Tests for verifying from logits: `verify_batch` / `sample_batch` with from_logits=True (specdec/batched/logits.py).

The claim under test: from logits z, the batch verifiers decide exactly as the probability path does on
p = softmax(z / T), computed independently (`specdec.softmax`, plain Python, math.fsum), wherever the
decision is not within float rounding of a boundary. Which cases are exact and which need a tolerance:
- exact: temperature 0 (greedy: only argmaxes of logits); probability 0 from -inf logits (both sides 0);
  exact ties (equal logits give bitwise-equal probabilities on both sides, and both take the lower
  index); the bonus argmax (argmax z = argmax softmax(z / T) for logits on a grid);
- within a tolerance: float32 logits go through a float32 logsumexp, whose p(x)/q(x), residual and CDF
  agree with the float64 reference to ~1e-6 relative (float64 logits: ~1e-12). A row whose acceptance
  test, residual argmax or inverse-CDF draw lies within TOL of a boundary is "near" and skipped; the
  tests count the near rows and require them to be rare (they are, as margins are continuous).

Also: greedy equals greedy decoding of the target; the sampled path is lossless (fixed-seed Monte Carlo,
the same 4.5-sigma statistic as test_batched.py); blocks and position groups do not change results;
and bad logits get errors that name the argument and position.
"""

import numpy as np
import pytest
from helpers import max_z
from references import graded_row, greedy_row, row_uniform, sampled_row, softmax_rows
from hypothesis import given, settings
from hypothesis import strategies as st

import specdec.batched.logits as batched_logits
from specdec.batched import sample_batch, verify_batch

TOL = {np.float32: 1e-5, np.float64: 1e-11}
Z_MAX = 4.5


@st.composite
def logit_batches(draw, dtype):
    """Logits on a grid of quarters in [-3, 3] (exact ties are common) with some -inf (probability 0);
    B 1..5, K 0..4, V 1..7, the bonus row or not, ragged rows (-1, NaN padding); x drawn where q > 0;
    u anywhere in [0, 1] or exactly 0 or 1; temperature one of 0.5, 1, 2.5 or per row."""
    b, k, v = draw(st.integers(1, 5)), draw(st.integers(0, 4)), draw(st.integers(1, 7))
    rows = k + draw(st.integers(0, 1))
    def logits(n_rows):
        n = b * n_rows * v
        z = np.array(draw(st.lists(st.integers(-13, 12), min_size=n, max_size=n)), np.float64).reshape(b, n_rows, v)
        z[z == -13] = -np.inf                                       # ~1 in 26 entries: probability 0
        z[..., 0] = np.where(np.isinf(z).all(axis=-1), 0.0, z[..., 0])   # at least one finite logit per row
        return z / 4.0
    zp, zq = logits(rows), logits(k)
    tokens = np.zeros((b, k), np.int64)
    u = np.array(draw(st.lists(st.one_of(st.just(0.0), st.just(1.0), st.floats(0.0, 1.0)),
                               min_size=b * k, max_size=b * k)), np.float64).reshape(b, k)
    for i in range(b):
        kb = draw(st.integers(0, k))
        for j in range(kb):
            tokens[i, j] = draw(st.sampled_from(np.flatnonzero(np.isfinite(zq[i, j])).tolist()))
        tokens[i, kb:] = -1
        zq[i, kb:] = u[i, kb:] = np.nan
        if kb < k:
            zp[i, kb + (rows > k):] = np.nan
    temperature = draw(st.one_of(st.sampled_from([0.5, 1.0, 2.5]),
                                 st.lists(st.sampled_from([0.5, 1.0, 2.5]), min_size=b, max_size=b).map(np.array)))
    return tokens, zq.astype(dtype), zp.astype(dtype), u, temperature


def reference_rows(tokens, zq, zp, temperature, b):
    """Row b's real prefix as Python lists: tokens, q rows, p rows (with the bonus row if any), from softmax(z / T)."""
    k = list(tokens[b]).index(-1) if -1 in tokens[b] else tokens.shape[1]
    t = float(np.broadcast_to(temperature, (len(tokens),))[b])
    p_rows = zp[b, :k + (zp.shape[1] > tokens.shape[1])]
    return tokens[b, :k].tolist(), softmax_rows(zq[b, :k], t), softmax_rows(p_rows, t)


def compare(out, reference, n_rows):
    """Assert equality on every row the reference does not mark near; return the number of near rows."""
    near = 0
    for b in range(n_rows):
        count, bonus, is_near = reference(b)
        near += is_near
        if not is_near:
            assert (out["acceptance_count"][b], out["bonus_token"][b]) == (count, bonus), f"row {b}"
    return near


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=120)
@given(data=st.data())
def test_verify_batch_from_logits_equals_the_rule_on_softmax_rows(dtype, data):
    tokens, zq, zp, u, temperature = data.draw(logit_batches(dtype))
    out = verify_batch(tokens, zq, zp, u, from_logits=True, temperature=temperature)
    compare(out, lambda b: graded_row(*reference_rows(tokens, zq, zp, temperature, b),
                                      list(u[b]), TOL[dtype]), len(tokens))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=120)
@given(data=st.data())
def test_sample_batch_from_logits_equals_the_sampled_rule_on_softmax_rows(dtype, data):
    tokens, zq, zp, _, temperature = data.draw(logit_batches(dtype))
    seeds = np.arange(len(tokens)) * 1000 + data.draw(st.integers(0, 999))
    out = sample_batch(tokens, zq, zp, seeds, from_logits=True, temperature=temperature)
    def reference(b):
        row_tokens, q, p = reference_rows(tokens, zq, zp, temperature, b)
        uniforms = [row_uniform(int(seeds[b]), 0, j) for j in range(len(row_tokens) + 1)]
        return sampled_row(row_tokens, q, p, uniforms, TOL[dtype])
    compare(out, reference, len(tokens))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_near_rows_are_rare_on_continuous_logits(dtype):
    """Realistic rows (normal logits, V = 500, drafts from q): the tolerance excuses at most 1 row in 150."""
    rng = np.random.default_rng(1)
    zp = rng.normal(0, 3, (150, 5, 500))
    zq = zp[:, :4] + rng.normal(0, 1, (150, 4, 500))
    q = np.exp(zq - zq.max(-1, keepdims=True))
    tokens = ((q.cumsum(-1) / q.sum(-1, keepdims=True)) < rng.random((150, 4, 1))).sum(-1)
    u = rng.random((150, 4))
    zq, zp = zq.astype(dtype), zp.astype(dtype)
    out = verify_batch(tokens, zq, zp, u, from_logits=True, temperature=0.7)
    near = compare(out, lambda b: graded_row(*reference_rows(tokens, zq, zp, 0.7, b), list(u[b]), TOL[dtype]), 150)
    assert near <= 1
    seeds = np.arange(150)
    out = sample_batch(tokens, zq, zp, seeds, from_logits=True, temperature=0.7)
    def reference(b):
        row = reference_rows(tokens, zq, zp, 0.7, b)
        return sampled_row(*row, [row_uniform(b, 0, j) for j in range(5)], TOL[dtype])
    assert compare(out, reference, 150) <= 1


def test_hand_worked_logits_and_temperature():
    """z_p = log p + 3 is the graded problem's example 1 (logits are defined up to a constant per row):
    accepted, bonus 0.

    At T = 2, row p_0 = softmax(log [0.2, 0.8] / 2) = [sqrt 0.2, sqrt 0.8] / (sqrt 0.2 + sqrt 0.8) = [1/3, 2/3]
    and q_0 = [sqrt 0.8, sqrt 0.2] / ... = [2/3, 1/3]: drafting 0 gives ratio (1/3) / (2/3) = 0.5, so u = 0.49
    accepts and u = 0.51 rejects, with residual max(0, p - q) = [0, 1/3] -> token 1.
    """
    out = verify_batch([[2, 1]], np.log([[[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]]]),
                       np.log([[[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]]]) + 3.0, [[0.5, 0.4]],
                       from_logits=True)
    assert out["acceptance_count"].tolist() == [2] and out["bonus_token"].tolist() == [0]
    zq, zp = np.log([[[0.8, 0.2]]]), np.log([[[0.2, 0.8], [0.9, 0.1]]])
    for u, count, bonus in ((0.49, 1, 0), (0.51, 0, 1)):
        out = verify_batch([[0]], zq, zp, [[u]], from_logits=True, temperature=2.0)
        assert (out["acceptance_count"][0], out["bonus_token"][0]) == (count, bonus)


def test_minus_inf_is_probability_zero_and_nothing_else_is():
    """p(x) = 0 (z = -inf): the graded rule accepts only u = 0, the sampler never. A finite logit is never rounded
    to probability 0: z_q(x) = -200 underflows a float32 softmax (exp(-200) < 1e-45), so the probability path
    refuses q(x) = 0, while from logits q(x) = e^-200 > 0 and p(x) / q(x) is huge: accepted."""
    zq, zp = np.array([[[0.0, 0.0]]]), np.array([[[-np.inf, 0.0], [0.0, 1.0]]])
    assert verify_batch([[0]], zq, zp, [[0.0]], from_logits=True)["acceptance_count"].tolist() == [1]
    assert verify_batch([[0]], zq, zp, [[1e-300]], from_logits=True)["acceptance_count"].tolist() == [0]
    out = sample_batch([[0]] * 200, np.zeros((200, 1, 2)), np.tile(zp, (200, 1, 1)), np.arange(200), from_logits=True)
    assert set(out["acceptance_count"].tolist()) == {0} and set(out["bonus_token"].tolist()) == {1}
    zq = np.array([[[-200.0, 0.0]]], np.float32)
    zp = np.array([[[0.0, 0.0], [0.0, 0.0]]], np.float32)
    q32 = np.exp(zq - zq.max(-1, keepdims=True))
    q32 /= q32.sum(-1, keepdims=True)
    with pytest.raises(ValueError, match=r"draft_probs\[0, 0, 0\] is 0 but draft_tokens\[0, 0\] is 0"):
        verify_batch([[0]], q32, np.full((1, 2, 2), 0.5, np.float32), [[1.0]])
    assert verify_batch([[0]], zq, zp, [[1.0]], from_logits=True)["acceptance_count"].tolist() == [1]


def test_large_and_half_precision_logits():
    """Logits near 1e4 (exp would overflow without the max shift) and float16 logits give the float64 answer."""
    rng = np.random.default_rng(2)
    zp, zq = rng.normal(0, 2, (50, 4, 30)), rng.normal(0, 2, (50, 3, 30))
    tokens, u = rng.integers(0, 30, (50, 3)), rng.random((50, 3))
    for shift, dtype in ((1e4, np.float64), (0.0, np.float16)):
        a, b = zq.astype(dtype).astype(np.float64), zp.astype(dtype).astype(np.float64)   # the same values
        want = verify_batch(tokens, a, b, u, from_logits=True)
        got = verify_batch(tokens, (a + shift).astype(dtype), (b + shift).astype(dtype), u, from_logits=True)
        near = compare(got, lambda r: graded_row(*reference_rows(tokens, a, b, 1.0, r), list(u[r]), 1e-3), 50)
        assert near <= 2 and got["bonus_token"].dtype == np.int64
        assert (want["acceptance_count"] == got["acceptance_count"]).mean() > 0.95


# --- temperature 0: greedy decoding --------------------------------------------------------------

def test_temperature_zero_is_greedy_decoding():
    """T = 0: accept while x_i = argmax z_i, correct with that argmax, bonus argmax z_K; ties to the lower index;
    draft logits and uniforms play no part. Per-row temperatures mix greedy and sampled rows in one batch."""
    rng = np.random.default_rng(3)
    zp = rng.integers(-2, 3, (40, 5, 6)).astype(np.float64)        # small integers: many tied maxima
    zq = rng.normal(size=(40, 4, 6))
    tokens = np.where(rng.random((40, 4)) < 0.7, zp[:, :4].argmax(-1), rng.integers(0, 6, (40, 4)))
    tokens[::5, 2:] = -1                                            # ragged rows too
    for fn, extra in ((verify_batch, rng.random((40, 4))), (sample_batch, np.arange(40))):
        out = fn(tokens, zq, zp, extra, from_logits=True, temperature=0.0)
        for b in range(40):
            k = list(tokens[b]).index(-1) if -1 in tokens[b] else 4
            assert (out["acceptance_count"][b], out["bonus_token"][b]) == \
                greedy_row(tokens[b, :k].tolist(), zp[b, :k + 1])
    temperature = np.where(np.arange(40) % 2 == 0, 0.0, 1.0)        # even rows greedy, odd rows sampled
    mixed = sample_batch(tokens, zq, zp, np.arange(40), from_logits=True, temperature=temperature)
    sampled = sample_batch(tokens, zq, zp, np.arange(40), from_logits=True, temperature=1.0)
    greedy = sample_batch(tokens, zq, zp, np.arange(40), from_logits=True, temperature=0.0)
    for key in ("acceptance_count", "bonus_token"):
        assert mixed[key][::2].tolist() == greedy[key][::2].tolist()
        assert mixed[key][1::2].tolist() == sampled[key][1::2].tolist()


def test_greedy_is_the_graded_rule_on_one_hot_rows():
    """The T -> 0 limit: softmax(z, 0) is one-hot at the argmax; with q one-hot at the drafted token and u > 0 the
    graded rule accepts x iff p(x) = 1 and its residual is the argmax: the same as greedy verification."""
    rng = np.random.default_rng(4)
    for trial in range(100):
        zp = rng.integers(-2, 3, (1, 4, 5)).astype(np.float64)
        tokens = np.where(rng.random((1, 3)) < 0.6, zp[:, :3].argmax(-1), rng.integers(0, 5, (1, 3)))
        u = rng.uniform(1e-9, 1.0, (1, 3))
        p = np.array([softmax_rows(zp[0], 0.0)])
        q = np.eye(5)[tokens]                                        # [1, 3, 5] one-hot at the draft
        want = verify_batch(tokens, q, p, u)
        got = verify_batch(tokens, np.zeros((1, 3, 5)), zp, u, from_logits=True, temperature=0)
        assert want["acceptance_count"].tolist() == got["acceptance_count"].tolist()
        assert want["bonus_token"].tolist() == got["bonus_token"].tolist()


# --- lossless from logits -------------------------------------------------------------------------

@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_sample_batch_from_logits_is_lossless(temperature):
    """40,000 rows, K = 3, V = 5, drafts x ~ softmax(z_q / T): the first emitted token is distributed as
    softmax(z_p0 / T) and the bonus after full acceptance as softmax(z_p3 / T) (seeds 0..N-1)."""
    n = 40_000
    rng = np.random.default_rng(5)
    zp = np.array([[0.0, 1.0, 2.0, -1.0, 0.5], [2.0, 0.0, 0.0, 0.0, -np.inf], [0.5, 0.5, 1.0, 0.0, 0.0],
                   [1.0, -np.inf, 0.0, 0.0, 2.0]])
    zq = np.array([[1.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 1.0, 0.0]])
    p = np.array(softmax_rows(zp, temperature))
    q = np.array(softmax_rows(zq, temperature))
    tokens = (q.cumsum(-1)[None] < rng.random((n, 3, 1))).sum(-1).clip(max=4)
    out = sample_batch(tokens, np.broadcast_to(zq, (n, 3, 5)), np.broadcast_to(zp, (n, 4, 5)), np.arange(n),
                       from_logits=True, temperature=temperature)
    first = np.where(out["acceptance_count"] > 0, tokens[:, 0], out["bonus_token"])
    assert max_z(first, p[0]) < Z_MAX
    assert max_z(out["bonus_token"][out["acceptance_count"] == 3], p[3]) < Z_MAX
    assert max_z(first, q[0]) > Z_MAX                               # power: the draft's law is rejected


# --- blocks and position groups do not change results -------------------------------------------

@pytest.mark.parametrize("block", [1, 7, 64, 1 << 18])
def test_block_size_does_not_change_results(block, monkeypatch):
    """BLOCK decides how many rows and positions one pass takes (1: one row per pass, lazily position by position;
    large: all positions of all rows at once). Every choice must give the same answers, bit for bit."""
    rng = np.random.default_rng(6)
    zp = rng.normal(0, 2, (30, 6, 11)).astype(np.float32)
    zq = (zp[:, :5] + rng.normal(0, 1, (30, 5, 11))).astype(np.float32)
    tokens = rng.integers(0, 11, (30, 5))
    tokens[::4, 3:] = -1
    u = rng.random((30, 5))
    temperature = rng.choice([0.0, 0.7, 1.0], 30)
    want_v = verify_batch(tokens, zq, zp, u, from_logits=True, temperature=temperature)
    want_s = sample_batch(tokens, zq, zp, np.arange(30), from_logits=True, temperature=temperature)
    monkeypatch.setattr(batched_logits, "BLOCK", block)
    got_v = verify_batch(tokens, zq, zp, u, from_logits=True, temperature=temperature)
    got_s = sample_batch(tokens, zq, zp, np.arange(30), from_logits=True, temperature=temperature)
    for want, got in ((want_v, got_v), (want_s, got_s)):
        assert want["acceptance_count"].tolist() == got["acceptance_count"].tolist()
        assert want["bonus_token"].tolist() == got["bonus_token"].tolist()


def test_caller_logits_are_never_written():
    rng = np.random.default_rng(7)
    zp, zq = rng.normal(size=(8, 4, 9)), rng.normal(size=(8, 3, 9))
    before = zp.copy(), zq.copy()
    sample_batch(rng.integers(0, 9, (8, 3)), zq, zp, np.arange(8), from_logits=True, temperature=0.5)
    assert (zp == before[0]).all() and (zq == before[1]).all()


# --- validation ----------------------------------------------------------------------------------

def logit_input(**changes):
    good = dict(draft_tokens=np.array([[0, 1]] * 4), draft_probs=np.zeros((4, 2, 8)),
                target_probs=np.zeros((4, 3, 8)), random_samples=np.full((4, 2), 0.5), from_logits=True)
    return {**good, **changes}


def with_entry(shape, index, value):
    z = np.zeros(shape)
    z[index] = value
    return z


@pytest.mark.parametrize("kwargs, error, match", [
    (logit_input(target_probs=with_entry((4, 3, 8), (3, 1, 7), np.nan)), ValueError,
     r"target_logits\[3, 1, 7\] is nan: logits must be finite or -inf"),
    (logit_input(draft_probs=with_entry((4, 2, 8), (2, 0, 5), np.inf)), ValueError,
     r"draft_logits\[2, 0, 5\] is inf: logits must be finite or -inf"),
    (logit_input(target_probs=with_entry((4, 3, 8), (1, 2, slice(None)), -np.inf)), ValueError,
     r"target_logits\[1, 2\] is -inf everywhere: no token can be chosen"),
    (logit_input(draft_probs=with_entry((4, 2, 8), (0, 1, 1), -np.inf)), ValueError,
     r"draft_logits\[0, 1, 1\] is -inf but draft_tokens\[0, 1\] is 1: the draft cannot have proposed"),
    (logit_input(temperature=-0.5), ValueError, r"temperature is -0.5: a temperature must be finite and >= 0"),
    (logit_input(temperature=np.array([1.0, 1.0, np.nan, 1.0])), ValueError, r"temperature\[2\] is nan"),
    (logit_input(temperature=np.ones(3)), TypeError,
     r"temperature must be a number or one number per row \(shape \(4,\)\)"),
    (logit_input(temperature=True), TypeError, r"temperature must be a number .* dtype bool"),
    (logit_input(from_logits=False, temperature=0.5, draft_probs=np.full((4, 2, 8), 1 / 8),
                 target_probs=np.full((4, 3, 8), 1 / 8)), ValueError, r"temperature applies to logits"),
    (logit_input(draft_probs=np.zeros((4, 2, 7))), ValueError, r"target_logits has shape \(4, 3, 8\) but draft_logits"),
])
def test_bad_logits_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        verify_batch(**kwargs)


def test_validate_false_skips_only_the_row_checks():
    """validate=False trusts the rows (NaN in an unread row passes) but still checks ids, uniforms and q(x) > 0."""
    kwargs = logit_input(target_probs=with_entry((4, 3, 8), (3, 2, 7), np.nan), validate=False)
    kwargs["random_samples"] = np.zeros((4, 2))                     # u = 0 accepts: row 3's NaN is in its bonus row
    verify_batch(**{**kwargs, "target_probs": with_entry((4, 3, 8), (3, 1, 7), np.nan)})   # read, garbage in
    with pytest.raises(ValueError, match=r"draft_tokens\[0, 0\] is 9, outside"):
        verify_batch(**{**kwargs, "draft_tokens": np.array([[9, 1]] * 4)})
    with pytest.raises(ValueError, match=r"random_samples\[0, 1\] is 2.0, outside \[0, 1\]"):
        verify_batch(**{**kwargs, "random_samples": np.array([[0.0, 2.0]] * 4)})


def test_empty_batch_and_empty_draft_from_logits():
    """Edge cases: B = 0 gives empty arrays; K = 0 gives the target's argmax (graded; ties to the lower index),
    or -1 without a target row; V = 1 always accepts the only token."""
    out = verify_batch(np.zeros((0, 2), np.int64), np.zeros((0, 2, 3)), np.zeros((0, 3, 3)), np.zeros((0, 2)),
                       from_logits=True)
    assert out["acceptance_count"].tolist() == [] and out["bonus_token"].tolist() == []
    out = verify_batch([[], []], np.zeros((2, 0, 3)), [[[0.0, 1.0, 0.0]], [[2.0, 2.0, 0.0]]], [[], []],
                       from_logits=True)
    assert out["acceptance_count"].tolist() == [0, 0] and out["bonus_token"].tolist() == [1, 0]
    empty = verify_batch([[]], np.zeros((1, 0, 3)), np.zeros((1, 0, 3)), [[]], from_logits=True)
    assert empty["bonus_token"].tolist() == [-1]
    out = sample_batch([[0]], np.zeros((1, 1, 1)), np.zeros((1, 2, 1)), np.arange(1), from_logits=True)
    assert out["acceptance_count"].tolist() == [1] and out["bonus_token"].tolist() == [0]
