"""Peer test suites, ported to `verify_batch` / `sample_batch` with the kit's conventions.

Sources (each case below names its original):
- vLLM v1 rejection sampler tests:
  https://github.com/vllm-project/vllm/blob/main/tests/v1/sample/test_rejection_sampler.py
- FlashInfer chain speculative sampling tests: `test_chain_speculative_sampling` in
  https://github.com/flashinfer-ai/flashinfer/blob/main/tests/utils/test_sampling.py and
  https://github.com/flashinfer-ai/flashinfer/blob/main/tests/trace/test_chain_speculative_sampling_reference_correctness.py

How the set-ups map: vLLM's requests with K_b drafts become rows padded with -1 (our placeholder);
its "all greedy" metadata is temperature 0; its target logits are our target logits and its draft
probabilities q become draft logits log q (softmax(log q) = q); its top-k, top-p and allowed-token
masks, applied inside vLLM's sampler, are applied here by the caller as -inf logits (only -inf means
probability 0). vLLM's tests mock the bonus-token sampler; here the bonus comes from the target's
row k_b, so each test gives that row the bonus token's logit. Output [accepted..., bonus, -1...]
is rebuilt from (acceptance_count, bonus_token) by `as_vllm`.

Cases that do not apply and are not ported: vLLM's penalty and bad-word processors (they need the
request's token history, which the verifier does not see: the caller folds them into the logits, as
the allowed-token case shows), the Triton-vs-native recovered-token kernels and the fp64 Gumbel race
(implementation internals; our draw is an inverse CDF, checked for its law below and in
test_batched*.py), FLy and synthetic verification (other rules). Where the conventions differ, a
test at the end states the difference and checks ours.
"""

import numpy as np
import pytest
from references import sampled_row, softmax_rows

from specdec.batched import sample_batch, verify_batch
from specdec.batched.seeds import row_uniforms

PLACEHOLDER = -1


def vllm_batch(spec_tokens, output_tokens, vocab=100, override=None):
    """(draft_tokens [B, K] padded with -1, target logits [B, K + 1, V]): -100 everywhere, +100 at output_tokens[b][j]
    in row j (the last output token is the bonus, in row k_b), override (if any) at 99 in every row.
    Like vLLM's create_logits_tensor, plus the bonus row it mocks."""
    k = max((len(s) for s in spec_tokens), default=0)
    tokens = np.full((len(spec_tokens), k), PLACEHOLDER)
    logits = np.full((len(spec_tokens), k + 1, vocab), -100.0)
    for b, (spec, out) in enumerate(zip(spec_tokens, output_tokens)):
        tokens[b, :len(spec)] = spec
        for j, t in enumerate(out):
            logits[b, j, t] = 100.0
    if override is not None:
        logits[..., override] = 99.0
    return tokens, logits


def as_vllm(tokens, out):
    """vLLM's output layout: the accepted drafts, then the correction or bonus, then -1 up to width K + 1."""
    rows = []
    for b, (count, bonus) in enumerate(zip(out["acceptance_count"], out["bonus_token"])):
        row = tokens[b, :count].tolist() + [int(bonus)]
        rows.append(row + [PLACEHOLDER] * (tokens.shape[1] + 1 - len(row)))
    return rows


def greedy(spec_tokens, output_tokens, **kwargs):
    tokens, logits = vllm_batch(spec_tokens, output_tokens, **kwargs)
    draft = np.zeros(tokens.shape + (logits.shape[2],))              # draft_probs=None in vLLM: unused at T = 0
    out = verify_batch(tokens, draft, logits, np.zeros(tokens.shape), from_logits=True, temperature=0.0)
    return as_vllm(tokens, out)


# --- vLLM: greedy sampling ------------------------------------------------------------------------

@pytest.mark.parametrize("spec, output, expected", [
    ([[1, 2, 3]], [[1, 2, 3, 4]], [[1, 2, 3, 4]]),                                 # test_perfect_match
    ([[1, 2, 3]], [[1, 5, 3, 4]], [[1, 5, -1, -1]]),                               # test_early_mismatch
    ([[1, 2], [3]], [[1, 2, 5], [3, 4]], [[1, 2, 5], [3, 4, -1]]),                 # test_multiple_sequences (ragged)
    ([[1]], [[1, 2]], [[1, 2]]),                                                   # test_single_token_sequence
    ([[]], [[5]], [[5]]),                                                          # test_empty_sequence
    ([[1, 2, 3], [4, 5, 6]], [[1, 2, 7, 6], [4, 8, 6, 9]],
     [[1, 2, 7, -1], [4, 8, -1, -1]]),                                             # test_multiple_mismatches
    ([[1, 2]], [[1, 2, 3]], [[1, 2, 3]]),                                          # test_parametrized_cases: perfect
    ([[1]], [[2, 3]], [[2, -1]]),                                                  # ... first mismatch
    ([[1, 2], [3, 4]], [[1, 5, 6], [3, 4, 7]], [[1, 5, -1], [3, 4, 7]]),           # ... mixed matches
])
def test_vllm_greedy_cases(spec, output, expected):
    assert greedy(spec, output) == expected


def test_vllm_allowed_token_ids_as_a_logit_mask():
    """vLLM test_allowed_token_ids: requests 0 and 2 may not use ids [i, i + 5); token 15 is the runner-up (99).

    Request 0: draft 1 is masked, so the correction is 15. Request 1 (no mask): 10, 5 accepted, 3 != 10 -> 10.
    Request 2: 7, 10, 12 accepted. Difference: vLLM's test mocks the bonus (5); here the bonus comes from the
    masked target row 3, where 5 is not allowed: 15.
    """
    tokens, logits = vllm_batch([[1, 2, 10], [10, 5, 3], [7, 10, 12]], [[1, 2, 10, 5], [10, 5, 10, 5],
                                                                        [7, 10, 12, 5]], override=15)
    for b in (0, 2):                                                 # create_allowed_token_ids: even requests
        logits[b, :, b:b + 5] = -np.inf
    out = verify_batch(tokens, np.zeros((3, 3, 100)), logits, np.zeros((3, 3)), from_logits=True, temperature=0)
    assert as_vllm(tokens, out) == [[15, -1, -1, -1], [10, 5, 10, -1], [7, 10, 12, 15]]


# --- vLLM: random sampling ------------------------------------------------------------------------

def random_case(rng, batch, k, vocab=1000):
    """vLLM's set-up: draft probabilities softmax(U[0, 1)), target logits U[0, 1), draft ids uniform at random."""
    draft_logits = rng.random((batch, k, vocab), dtype=np.float32)   # softmax of these is vLLM's draft_probs
    target_logits = rng.random((batch, k + 1, vocab), dtype=np.float32)
    return rng.integers(0, vocab, (batch, k)), draft_logits, target_logits


@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("batch", [1, 4, 8])
def test_vllm_deterministic_when_seeded(k, batch):
    """vLLM test_deterministic_when_seeded (n_rep 20): seeded rows give the same tokens every repetition. Ours seeds
    every row (frac_seeded 1; vLLM also mixes unseeded rows, which assert nothing), and we add: the same tokens
    when the rows are shuffled."""
    rng = np.random.default_rng(k * 10 + batch)
    tokens, zq, zp = random_case(rng, batch, k)
    seeds = np.arange(batch) + 1000
    first = as_vllm(tokens, sample_batch(tokens, zq, zp, seeds, from_logits=True))
    for _ in range(19):
        assert as_vllm(tokens, sample_batch(tokens, zq, zp, seeds, from_logits=True)) == first
    order = rng.permutation(batch)
    shuffled = sample_batch(tokens[order], zq[order], zp[order], seeds[order], from_logits=True)
    assert as_vllm(tokens[order], shuffled) == [first[i] for i in order]


@pytest.mark.slow
def test_vllm_rejection_sampling_approximates_target_distribution():
    """vLLM test_rejection_sampling_approximates_target_distribution: V = 10, k = 2, drafts x ~ q; the L2 distance of
    the emitted tokens' histogram to the target shrinks (from N = 10 to 100,000) 20 times more than its distance to
    100 random reference distributions. Fixed seeds here (vLLM's are not)."""
    rng = np.random.default_rng(11)
    vocab, k = 10, 2
    zq = rng.random(vocab, dtype=np.float32)
    zp = rng.random(vocab, dtype=np.float32)
    q, p = np.array(softmax_rows([zq], 1.0)[0]), np.array(softmax_rows([zp], 1.0)[0])
    reference = rng.random((100, vocab))
    reference = np.exp(reference) / np.exp(reference).sum(-1, keepdims=True)
    to_target, to_reference = [], []
    for n in (10, 100, 1_000, 10_000, 100_000):
        tokens = (q.cumsum()[None, None] < rng.random((n, k, 1))).sum(-1).clip(max=vocab - 1)
        out = sample_batch(tokens, np.broadcast_to(zq, (n, k, vocab)), np.broadcast_to(zp, (n, k + 1, vocab)),
                           np.arange(n) + 7 * n, from_logits=True)
        emitted = np.array(as_vllm(tokens, out))[:, :-1].ravel()     # positions 0..k-1, as vLLM histograms them
        hist = np.bincount(emitted[emitted >= 0], minlength=vocab) / (emitted >= 0).sum()
        to_target.append(np.linalg.norm(p - hist))
        to_reference.append(np.linalg.norm(reference - hist) / len(reference))
    assert to_target[0] / to_target[-1] > 20 * (to_reference[0] / to_reference[-1])


def masked_case(rng, mask):
    """vLLM's _test_masked_logits set-up with 100 requests x 3 drafts x V = 100: random draft probabilities, drafts
    x ~ q, uniform target logits (+0.1 on the kept ids); the mask [100, 3, 100] (True = masked) becomes -inf."""
    zq = rng.random((100, 3, 100))
    q = np.exp(zq) / np.exp(zq).sum(-1, keepdims=True)
    tokens = (q.cumsum(-1) < rng.random((100, 3, 1))).sum(-1).clip(max=99)
    zp = np.where(mask, 0.0, 0.1)
    zp = np.concatenate([zp, np.zeros((100, 1, 100))], axis=1)      # the bonus row (vLLM mocks it)
    zp[:, :3][mask] = -np.inf
    out = sample_batch(tokens, zq, zp, np.arange(100), from_logits=True)
    emitted = np.array(as_vllm(tokens, out))[:, :-1]                # [100, 3]: position j was scored by row j
    return [(int(t), j, b) for b in range(100) for j, t in enumerate(emitted[b]) if t != PLACEHOLDER]


@pytest.mark.parametrize("top_k", [1, 5, 99])
def test_vllm_top_k(top_k):
    """vLLM test_top_k: every token emitted at a drafted position is among that position's top-k ids."""
    rng = np.random.default_rng(top_k)
    keep = np.argsort(rng.random((100, 3, 100)), axis=-1)[..., :top_k]
    mask = np.ones((100, 3, 100), bool)
    np.put_along_axis(mask, keep, False, axis=-1)
    assert all(not mask[b, j, t] for t, j, b in masked_case(rng, mask))


@pytest.mark.parametrize("top_p", [0.5, 0.9, 0.99])
def test_vllm_top_p(top_p):
    """vLLM test_top_p: ids sorted by logit ascending, those whose cumulative probability stays <= 1 - top_p are
    masked (the top id always kept); every emitted token is outside the mask."""
    rng = np.random.default_rng(int(top_p * 100))
    logits = rng.normal(size=(100, 3, 100))
    order = np.argsort(logits, axis=-1)
    probs = np.exp(np.take_along_axis(logits, order, -1))
    cumulative = (probs / probs.sum(-1, keepdims=True)).cumsum(-1)
    drop = cumulative <= 1 - top_p
    drop[..., -1] = False
    mask = np.zeros((100, 3, 100), bool)
    np.put_along_axis(mask, order, drop, axis=-1)
    assert all(not mask[b, j, t] for t, j, b in masked_case(rng, mask))


@pytest.mark.parametrize("vocab", [100, 8193, 10000, 151936])
@pytest.mark.parametrize("draft_is_one_hot", [True, False])
def test_vllm_recovered_tokens_stay_in_the_vocabulary(vocab, draft_is_one_hot):
    """vLLM test_sample_recovered_tokens_vocab_boundary (GHSA-8wr5-jm2h-8r4f): with no target mass in the last partial
    8192-id tile (or, for V < 8192, all mass on id 0 and that id drafted), every correction is an id in [0, V) that
    the target gives mass. Our draw works in 2048-id blocks, so this also covers empty blocks at the end.
    vLLM's draft_probs=None (one-hot q at the draft) is draft_is_one_hot."""
    rng = np.random.default_rng(vocab)
    p = rng.random((2, 4, vocab), dtype=np.float32)
    tail = (vocab // 8192) * 8192
    if tail:
        p[..., tail:] = 0.0
    else:
        p[:] = 0.0
        p[..., 0] = 1.0
    p /= p.sum(-1, keepdims=True)
    tokens = np.zeros((2, 3), np.int64) if not tail else rng.integers(0, vocab, (2, 3))
    q = np.exp(rng.random((2, 3, vocab), dtype=np.float32))
    if draft_is_one_hot:
        q = np.zeros_like(q)
        np.put_along_axis(q, tokens[..., None], 1.0, axis=-1)
    q /= q.sum(-1, keepdims=True)
    out = sample_batch(tokens, q, p, np.array([42, 43]))
    assert ((out["bonus_token"] >= 0) & (out["bonus_token"] < vocab)).all()
    rows = np.minimum(out["acceptance_count"], 3)
    assert (p[np.arange(2), rows, out["bonus_token"]] > 0).all()


def test_vllm_placeholder_draft_token():
    """vLLM test_placeholder_draft_token_rejected_random: drafts [1, 99, -1] at T = 1. vLLM rejects the placeholder
    and recovers a token at position 2; ours reads -1 as "no draft" and draws the bonus from target row 2: the
    same tokens, [1, 99, t] with t a valid id. Never is the placeholder used as an index."""
    tokens, logits = vllm_batch([[1, 99, PLACEHOLDER]], [[1, 99, 7, 9]])
    out = sample_batch(tokens, np.zeros((1, 3, 100)), logits, np.array([0]), from_logits=True)
    emitted = as_vllm(tokens, out)[0]
    assert emitted[:2] == [1, 99] and 0 <= emitted[2] < 100 and out["acceptance_count"].tolist() == [2]


# --- FlashInfer: chain speculative sampling ------------------------------------------------------

def flashinfer_sizes():
    """The test's grid: batch [1, 99, 989] x vocab [111, 32000, 128256] x K [1, 3, 5, 7] x one-hot target or not.
    Cases over 50M entries (B (2K + 1) V, 200 MB of float32) are left out: they reach 7.6 GB, too big for a
    course kit's test run. Those over 10M entries are marked slow."""
    for b in (1, 99, 989):
        for v in (111, 32000, 128256):
            for k in (1, 3, 5, 7):
                size = b * (2 * k + 1) * v
                if size <= 50_000_000:
                    for one_hot in (False, True):
                        marks = [pytest.mark.slow] if size > 10_000_000 else []
                        yield pytest.param(b, v, k, one_hot, marks=marks,
                                           id=f"B{b}-V{v}-K{k}-{'onehot' if one_hot else 'rand'}")


@pytest.mark.parametrize("batch, vocab, k, one_hot", list(flashinfer_sizes()))
def test_flashinfer_chain_speculative_sampling(batch, vocab, k, one_hot):
    """FlashInfer test_chain_speculative_sampling: draft rows U[0, 1) normalised, draft ids uniform at random; the
    target is random rows, or one-hot rows that match every draft plus a random bonus id. One-hot: everything is
    accepted and the bonus is that id. Random: the output is a valid prefix of the draft plus one id in [0, V)
    (FlashInfer checks the same: no gaps, -1 after the first mismatch, emitted + 1 ids). We add: the result is
    the plain sampled rule fed the same per-row uniforms (rows checked: the first 3)."""
    rng = np.random.default_rng(batch * vocab + k)
    q = rng.random((batch, k, vocab), dtype=np.float32)
    q /= q.sum(-1, keepdims=True)
    tokens = rng.integers(0, vocab, (batch, k))
    if one_hot:
        target_ids = np.concatenate([tokens, rng.integers(0, vocab, (batch, 1))], axis=1)
        p = np.zeros((batch, k + 1, vocab), np.float32)
        np.put_along_axis(p, target_ids[..., None], 1.0, axis=-1)
    else:
        p = rng.random((batch, k + 1, vocab), dtype=np.float32)
        p /= p.sum(-1, keepdims=True)
    seeds = np.arange(batch)
    out = sample_batch(tokens, q, p, seeds)
    count, bonus = out["acceptance_count"], out["bonus_token"]
    if one_hot:
        assert (count == k).all() and (bonus == target_ids[:, k]).all()
    assert ((count >= 0) & (count <= k)).all() and ((bonus >= 0) & (bonus < vocab)).all()
    uniforms = row_uniforms(seeds[:3], k + 1)
    for b in range(min(batch, 3)):
        want = sampled_row(tokens[b].tolist(), q[b].astype(np.float64).tolist(), p[b].astype(np.float64).tolist(),
                           uniforms[b].tolist(), tol=1e-9)
        if not want[2]:
            assert (count[b], bonus[b]) == want[:2]


@pytest.mark.parametrize("batch, k, vocab", [(3, 4, 128), (2, 3, 96)])
def test_flashinfer_reference_correctness_one_hot(batch, k, vocab):
    """FlashInfer test_chain_speculative_sampling_reference_correctness: one-hot draft and target rows that agree on
    every draft, and a fixed bonus id: all accepted, the bonus is that id, for both batch verifiers."""
    rng = np.random.default_rng(batch)
    tokens = rng.integers(0, vocab, (batch, k))
    bonus_ids = rng.integers(0, vocab, batch)
    q = np.zeros((batch, k, vocab))
    np.put_along_axis(q, tokens[..., None], 1.0, axis=-1)
    p = np.zeros((batch, k + 1, vocab))
    np.put_along_axis(p, np.concatenate([tokens, bonus_ids[:, None]], 1)[..., None], 1.0, axis=-1)
    for out in (sample_batch(tokens, q, p, np.arange(batch)), verify_batch(tokens, q, p, rng.random((batch, k)))):
        assert out["acceptance_count"].tolist() == [k] * batch and out["bonus_token"].tolist() == bonus_ids.tolist()


# --- where the conventions differ ----------------------------------------------------------------

def test_difference_draft_probability_zero_is_refused():
    """vLLM v1 rejects a draft x with q(x) = 0 ("q > 0 and p/q >= u"); FlashInfer accepts it when p(x) > 0
    (u q < p holds at q = 0). Ours refuses the input: a draft cannot propose a token it gives probability 0,
    so such a row is a bug upstream (e.g. a draft that sampled from a different q than it reports)."""
    with pytest.raises(ValueError, match=r"draft_probs\[0, 0, 1\] is 0 but draft_tokens\[0, 0\] is 1"):
        sample_batch([[1]], [[[1.0, 0.0]]], [[[0.5, 0.5], [0.5, 0.5]]], np.array([0]))


def test_difference_acceptance_at_equality():
    """vLLM v1 accepts when p/q >= u with u ~ U[0, 1), so u = 0 accepts even p(x) = 0 (a zero-probability token;
    u = 0 has probability 2**-24 in float32). Our sampler uses strict u < p/q: p(x) = 0 is never accepted.
    Our graded rule (the graded problem's) has u <= p/q, like vLLM's: given u = 0 it accepts."""
    assert verify_batch([[0]], [[[0.5, 0.5]]], [[[0.0, 1.0]]], [[0.0]])["acceptance_count"].tolist() == [1]
    out = sample_batch([[0]] * 1000, np.full((1000, 1, 2), 0.5), np.tile([[[0.0, 1.0]]], (1000, 1, 1)), np.arange(1000))
    assert set(out["acceptance_count"].tolist()) == {0}


def test_difference_empty_residual_falls_back_to_p():
    """At a rejection where max(0, p - q) has no mass (p = q up to the 1e-4 tolerance), vLLM v1 takes the argmax of
    zeros (token 0) and FlashInfer the last valid id; ours uses p itself: argmax p for the graded rule
    (here 2, not 0), a draw from p for the sampler (never token 0, which p gives no mass)."""
    q = np.tile([[[9e-5, 0.3, 0.7]]], (2000, 1, 1))                 # sums to 1.00009
    p = np.tile([[[0.0, 0.3, 0.7]]], (2000, 1, 1))
    tokens = np.zeros((2000, 1), np.int64)                           # p(0) = 0: always rejected
    assert set(verify_batch(tokens, q, p, np.full((2000, 1), 0.5))["bonus_token"].tolist()) == {2}
    drawn = sample_batch(tokens, q, p, np.arange(2000))["bonus_token"]
    assert set(drawn.tolist()) == {1, 2} and abs((drawn == 2).mean() - 0.7) < 4.5 * np.sqrt(0.21 / 2000)
