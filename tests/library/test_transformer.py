"""The NumPy transformer target and its KV cache, against a reference that keeps no cache.

The reference (`reference_rows`, written here) recomputes every prefix from scratch: one plain forward
over the whole window with a full causal mask, in float64, heads one at a time, with the window rule
spelled out as a loop. Most tests run a small random model (d = 32, 2 layers, context 16, hop 8) with
weights scaled up so its rows are far from uniform; the shipped weights are checked at the end.
"""

import math
import os
import time

import numpy as np
import pytest

from specdec.generation.decode import autoregressive_generate, speculative_generate
from specdec.generation.interface import RowDraft, Target
from specdec.models import transformer
from specdec.models.transformer import TransformerModel, init_params

V, D, LAYERS, HEADS, CONTEXT, HOP, START = 96, 32, 2, 4, 16, 8, 1
ATOL = 1e-5


@pytest.fixture(scope="module")
def params():
    rng = np.random.default_rng(0)
    p = init_params(V, CONTEXT, D, LAYERS, seed=0)
    return {k: (v + rng.standard_normal(v.shape) * 0.3).astype(np.float32) for k, v in p.items()}


@pytest.fixture(scope="module")
def long_params():
    """The same shapes with a context of 32 (hop 16 below): room for six hops in a short test."""
    rng = np.random.default_rng(1)
    p = init_params(V, 32, D, LAYERS, seed=1)
    return {k: (v + rng.standard_normal(v.shape) * 0.3).astype(np.float32) for k, v in p.items()}


def new_model(params):
    return TransformerModel(params, HEADS, CONTEXT, HOP, START)


@pytest.fixture(scope="module")
def draft(params):
    """A draft for the decoding tests: the target with perturbed weights, through the RowDraft adapter."""
    rng = np.random.default_rng(5)
    return RowDraft(new_model({k: (v + rng.standard_normal(v.shape) * 0.1).astype(np.float32)
                               for k, v in params.items()}))


# ---------------------------------------------------------------- the independent reference: no cache
def _layer_norm(x, g, b):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b


def reference_logits(p, tokens):
    """[T, V] float64 logits of the window `tokens` at positions 0..T-1: all at once, full causal mask."""
    p = {k: v.astype(np.float64) for k, v in p.items()}
    T, hd = len(tokens), D // HEADS
    x = p["wte"][tokens] + p["wpe"][:T]
    visible = np.tril(np.ones((T, T), bool))
    for i in range(LAYERS):
        w = lambda name: p[f"h{i}.{name}"]
        q, k, v = np.split(_layer_norm(x, w("ln1.g"), w("ln1.b")) @ w("attn.w_qkv") + w("attn.b_qkv"), 3, axis=1)
        heads = []
        for j in range(HEADS):
            cols = slice(j * hd, (j + 1) * hd)
            scores = np.where(visible, q[:, cols] @ k[:, cols].T / math.sqrt(hd), -np.inf)
            weights = np.exp(scores - scores.max(1, keepdims=True))
            heads.append(weights / weights.sum(1, keepdims=True) @ v[:, cols])
        x = x + np.concatenate(heads, 1) @ w("attn.w_proj") + w("attn.b_proj")
        h = _layer_norm(x, w("ln2.g"), w("ln2.b")) @ w("mlp.w_fc") + w("mlp.b_fc")
        h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
        x = x + h @ w("mlp.w_out") + w("mlp.b_out")
    return _layer_norm(x, p["ln_f.g"], p["ln_f.b"]) @ p["head.w"] + p["head.b"]


def reference_rows(p, ids, start, temperature=1.0):
    """p(. | ids[:t]) for t = start..len(ids), each from its own window, recomputed from scratch."""
    rows = []
    for t in range(start, len(ids) + 1):
        s = 0
        while t - s > CONTEXT:               # the window keeps the last CONTEXT - HOP + 1 .. CONTEXT ids
            s += HOP
        z = reference_logits(p, [START] + list(ids[s:t]))[-1] / temperature
        e = np.exp(z - z.max())
        rows.append(e / e.sum())
    return np.array(rows)


def some_ids(n, seed=1):
    return np.random.default_rng(seed).integers(0, V, n).tolist()


class Passes(list):
    def __init__(self):
        super().__init__()
        self.filled = []

    def clear(self):
        super().clear()
        self.filled.clear()


def _counting(monkeypatch, params):
    """The lengths of every forward pass the target models run (positions computed per call; not the draft's).
    `calls.filled` lists the rows of the next window each pass also filled (0 for none)."""
    calls = Passes()
    real = transformer.forward
    mine = transformer.fold(params, HEADS)[0]["wte"]          # the target's folded embeddings (not the draft's)

    def forward(weights, layers, tokens, *args):
        if np.array_equal(weights["wte"], mine):
            calls.append(len(tokens))
            extra = args[6] if len(args) > 6 else None
            calls.filled.append(0 if extra is None or extra.fill is None else len(extra.fill[0]))
        return real(weights, layers, tokens, *args)

    monkeypatch.setattr(transformer, "forward", forward)
    return calls


@pytest.fixture
def counted(monkeypatch, params):
    return _counting(monkeypatch, params)


@pytest.fixture
def counted_long(monkeypatch, long_params):
    return _counting(monkeypatch, long_params)


# ---------------------------------------------------------------- one call on gamma + 1 positions
def test_the_reference_agrees_with_the_model_on_a_whole_window(params):
    ids = some_ids(CONTEXT)
    np.testing.assert_allclose(new_model(params).probs_for_positions(ids, 0), reference_rows(params, ids, 0),
                               atol=ATOL, rtol=0)


@pytest.mark.parametrize("gamma", [0, 1, 4, 6, 7, 10])   # 1 row; 2..6 one product per row; 7, 11 rows padded
def test_one_call_on_gamma_plus_1_positions_equals_single_position_calls(params, gamma):
    prefix, drafts = some_ids(4), some_ids(gamma, seed=2)
    ids = prefix + drafts
    chain, single = new_model(params), new_model(params)
    single.probs_for_positions(prefix, len(prefix))          # both caches hold the prefix
    chain.probs_for_positions(prefix, len(prefix))
    rows = chain.probs_for_positions(ids, len(prefix))         # [gamma + 1, V] in one call
    one_by_one = np.concatenate([single.probs_for_positions(ids[:t], t) for t in range(len(prefix), len(ids) + 1)])
    assert rows.shape == (gamma + 1, V)
    np.testing.assert_allclose(rows, one_by_one, atol=ATOL, rtol=0)
    np.testing.assert_allclose(rows, reference_rows(params, ids, len(prefix)), atol=ATOL, rtol=0)
    np.testing.assert_allclose(rows.sum(1), 1.0, atol=1e-12)


def test_a_call_computes_only_what_the_cache_lacks(params, counted):
    model = new_model(params)
    prefix = some_ids(10)
    model.probs_for_positions(prefix, 0)
    assert counted == [11]                                     # the start symbol and 10 ids
    rows = model.probs_for_positions(prefix + [5, 6, 7], 10)   # 3 drafts: 3 new positions
    assert counted == [11, 3]
    again = model.probs_for_positions(prefix + [5, 6, 7], 0)   # every row already cached: no forward pass
    assert counted == [11, 3]
    np.testing.assert_allclose(again, reference_rows(params, prefix + [5, 6, 7], 0), atol=ATOL, rtol=0)
    np.testing.assert_array_equal(again[10:], rows)


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_temperature_divides_the_logits(params, temperature):
    ids = some_ids(9)
    np.testing.assert_allclose(new_model(params).probs_for_positions(ids, 5, temperature),
                               reference_rows(params, ids, 5, temperature), atol=ATOL, rtol=0)


# ---------------------------------------------------------------- rollback
def test_rollback_then_a_different_continuation_equals_a_fresh_model(params, counted):
    prefix = some_ids(8)
    model = new_model(params)
    model.probs_for_positions(prefix + [10, 11, 12, 13], len(prefix))   # gamma = 4 drafts scored
    accepted = prefix + [10, 11]                                        # 2 accepted, then a correction 40
    ids = accepted + [40, 41, 42, 43, 44]
    rows = model.probs_for_positions(ids, len(accepted) + 1)
    assert counted[-1] == 5                                             # the correction and 4 new drafts
    assert model.cached_ids == ids and model.cache_length == len(ids)   # the rejected 12, 13 are gone
    fresh = new_model(params).probs_for_positions(ids, len(accepted) + 1)
    np.testing.assert_allclose(rows, fresh, atol=ATOL, rtol=0)
    np.testing.assert_allclose(rows, reference_rows(params, ids, len(accepted) + 1), atol=ATOL, rtol=0)


def test_the_cache_keeps_the_accepted_prefix_and_its_memory_stays_bounded(params):
    model = new_model(params)
    slots = model._k.shape
    ids = some_ids(5)
    for step in range(6):                                    # draft 3, keep 1 plus a correction, repeatedly
        drafted = ids + some_ids(3, seed=10 + step)
        model.probs_for_positions(drafted, len(ids))
        assert model.cached_ids == drafted[model.cache_start:]
        ids = drafted[:len(ids) + 1] + [7]
        model.probs_for_positions(ids, len(ids))
        assert model.cached_ids == ids[model.cache_start:] and model.cache_length <= CONTEXT
    assert model._k.shape == slots                           # the arrays never grew
    np.testing.assert_allclose(model.probs_for_positions(ids, len(ids)), reference_rows(params, ids, len(ids)),
                               atol=ATOL, rtol=0)


def test_keep_and_rollback_by_hand(params, counted):
    ids = some_ids(12)
    model = new_model(params)
    model.probs_for_positions(ids, len(ids))
    model.rollback(3)
    assert model.cached_ids == ids[:9] and model.cache_length == 9
    model.keep(4)
    assert model.cached_ids == ids[:4]
    model.rollback(100)
    assert model.cached_ids == [] and model.cache_length == 0
    model.probs_for_positions(ids[:4], 4)
    counted.clear()
    row = model.probs_for_positions(ids, len(ids))
    assert counted == [8]                                    # after keep(4): ids[4:12]
    np.testing.assert_allclose(row, reference_rows(params, ids, len(ids)), atol=ATOL, rtol=0)
    with pytest.raises(ValueError, match="k is -1"):
        model.rollback(-1)
    with pytest.raises(ValueError, match="n is -2"):
        model.keep(-2)


# ---------------------------------------------------------------- trees
def random_tree(n, seed):
    rng = np.random.default_rng(seed)
    parents = [-1] + [int(rng.integers(-1, i)) for i in range(1, n)]
    return parents, rng.integers(0, V, n).tolist()


def path_to(parents, tokens, i):
    path = []
    while i >= 0:
        path.append(tokens[i])
        i = parents[i]
    return path[::-1]


@pytest.mark.parametrize("prefix_length", [0, 3, 9])
def test_a_tree_call_agrees_with_chain_calls_on_each_path(params, counted, prefix_length):
    ids = some_ids(prefix_length)
    parents, tokens = random_tree(12, seed=prefix_length)
    model = new_model(params)
    rows = model.probs_for_tree(ids, parents, tokens)
    assert len(counted) == 1 and rows.shape == (13, V)       # ONE forward pass: the chain and every node
    chain = new_model(params)
    expected = [chain.probs_for_positions(ids, len(ids))[0]]
    for i in range(len(tokens)):
        path = ids + path_to(parents, tokens, i)
        expected.append(chain.probs_for_positions(path, len(path))[0])
    np.testing.assert_allclose(rows, np.array(expected), atol=ATOL, rtol=0)
    for i in (0, 5, 11):
        path = ids + path_to(parents, tokens, i)
        np.testing.assert_allclose(rows[i + 1], reference_rows(params, path, len(path))[0], atol=ATOL, rtol=0)


def test_a_tree_call_does_not_corrupt_the_chain_cache(params, counted):
    ids = some_ids(7)
    parents, tokens = [-1, -1, 0, 0, 2], [3, 4, 5, 6, 7]
    model = new_model(params)
    model.probs_for_positions(ids, len(ids))
    model.probs_for_tree(ids, parents, tokens)
    assert counted == [8, 5] and model.cached_ids == ids      # the nodes were computed, not kept
    nxt = ids + [3, 5, 7, 50]                                 # the path 0 -> 2 -> 4 accepted, then a correction
    rows = model.probs_for_positions(nxt, len(ids))
    assert counted[-1] == 1                                   # the path's keys and values adopted from the nodes
    np.testing.assert_allclose(rows, reference_rows(params, nxt, len(ids)), atol=ATOL, rtol=0)
    model.probs_for_tree(nxt, [-1, 0], [1, 2])
    assert counted[-1] == 2 and model.cached_ids == nxt


def test_a_tree_bigger_than_the_spare_slots_grows_the_arrays(params):
    ids = some_ids(5)
    parents = [-1] * 100                                      # 100 children of the root
    tokens = (list(range(V)) + [1, 2, 3, 4])[:100]
    model = new_model(params)
    rows = model.probs_for_tree(ids, parents, tokens)
    expected = reference_rows(params, ids, len(ids))[0]
    np.testing.assert_allclose(rows[0], expected, atol=ATOL, rtol=0)
    np.testing.assert_allclose(rows[1 + 42], reference_rows(params, ids + [42], len(ids) + 1)[0], atol=ATOL, rtol=0)
    assert model.cached_ids == ids


def test_a_chain_shaped_tree_gives_the_chain_rows(params):
    ids, drafts = some_ids(4), some_ids(5, seed=3)
    rows = new_model(params).probs_for_tree(ids, [-1, 0, 1, 2, 3], drafts)
    np.testing.assert_allclose(rows, new_model(params).probs_for_positions(ids + drafts, len(ids)), atol=ATOL, rtol=0)


def test_bad_trees_and_arguments_are_refused(params):
    model = new_model(params)
    with pytest.raises(ValueError, match="one parent per node"):
        model.probs_for_tree([1], [-1], [1, 2])
    with pytest.raises(ValueError, match="node 1: parent 1"):
        model.probs_for_tree([1], [-1, 1], [1, 2])
    with pytest.raises(ValueError, match=r"token 96 in \[0, 96\)"):
        model.probs_for_tree([1], [-1], [96])
    with pytest.raises(ValueError, match="the tree is 10 deep; at most context - hop"):
        model.probs_for_tree([1], [-1] + list(range(9)), [1] * 10)
    with pytest.raises(ValueError, match="start is 3"):
        model.probs_for_positions([1, 2], 3)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        model.probs_for_positions([1, 2], 2, 0.0)
    with pytest.raises(ValueError, match="an id is 96"):
        model.probs_for_positions([1, 96], 2)
    with pytest.raises(ValueError, match="an id is -1"):
        model.probs_for_positions([-1], 1)


# ---------------------------------------------------------------- past the context
def test_the_window_rule():
    model = TransformerModel(init_params(V, CONTEXT, D, 1), HEADS, CONTEXT, HOP)
    assert [model.window_start(t) for t in (0, 16, 17, 24, 25, 32, 33, 100)] == [0, 0, 8, 8, 16, 16, 24, 88]
    assert all(model.context - model.hop < t - model.window_start(t) <= model.context for t in range(17, 200))


def test_past_the_context_rows_come_from_the_last_window_and_the_cache_restarts(params, counted):
    ids = some_ids(45)
    model = new_model(params)
    rows = model.probs_for_positions(ids, 0)                 # 46 rows from 5 windows: s = 0, 8, 16, 24, 32
    np.testing.assert_allclose(rows, reference_rows(params, ids, 0), atol=ATOL, rtol=0)
    assert model.cache_start == 32 and model.cached_ids == ids[32:]
    assert counted == [17, 17, 17, 17, 14]
    counted.clear()
    single = new_model(params)                               # one position at a time across a hop
    for t in range(14, 27):
        np.testing.assert_allclose(single.probs_for_positions(ids[:t], t), reference_rows(params, ids[:t], t),
                                   atol=ATOL, rtol=0)
        assert single.cache_length == t - single.cache_start <= CONTEXT
    # The next window's cache is filled as the text goes (a chunk of 1 at hop 8): crossing t = 17 and t = 25
    # computes one position, not a whole window.
    assert counted == [15] + [1] * 12
    drafts = ids[:23] + [9, 9, 9, 9]                         # a chain whose rows cross the hop at t = 24 / 25
    np.testing.assert_allclose(single.probs_for_positions(drafts, 23), reference_rows(params, drafts, 23),
                               atol=ATOL, rtol=0)


def test_a_tree_that_crosses_a_hop_agrees_with_the_reference(params):
    ids = some_ids(14)
    parents, tokens = [-1, 0, 1, 2, -1, 4], [5, 6, 7, 8, 9, 10]   # depth 4: rows at t = 14..18 cross t = 16 / 17
    model = new_model(params)
    model.probs_for_positions(ids, len(ids))
    rows = model.probs_for_tree(ids, parents, tokens)
    for i in range(len(tokens)):
        path = ids + path_to(parents, tokens, i)
        np.testing.assert_allclose(rows[i + 1], reference_rows(params, path, len(path))[0], atol=ATOL, rtol=0)
    np.testing.assert_allclose(rows[0], reference_rows(params, ids, len(ids))[0], atol=ATOL, rtol=0)


# ---------------------------------------------------------------- the Target interface, in the decoding loop
def test_next_token_probs_one_row_per_context(params):
    contexts = [some_ids(3), some_ids(5, seed=4), []]
    rows = new_model(params).next_token_probs(contexts)
    expected = np.array([reference_rows(params, c, len(c))[0] for c in contexts])
    np.testing.assert_allclose(rows, expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("verify", ["token", "block", "tree"])
def test_greedy_speculative_decoding_with_the_transformer_is_its_greedy_decoding(params, draft, verify):
    target = new_model(params)
    assert isinstance(target, Target)
    prompt = some_ids(5)
    res = speculative_generate(draft, target, prompt, 30, gamma=3, verify=verify)
    assert res.tokens == autoregressive_generate(new_model(params), prompt, 30)
    assert 0 < sum(res.accepted) < sum(res.drafted)          # drafts accepted and rejected
    assert target.cache_length <= CONTEXT                     # 35 characters: the window has moved


def test_each_verification_call_computes_only_its_new_positions(params, draft, counted):
    prompt = some_ids(4)
    res = speculative_generate(draft, new_model(params), prompt, 12, gamma=3)   # stays inside one window
    assert counted[0] == 1 + len(prompt) + res.drafted[0]    # the prompt's prefill, and the first drafts
    assert counted[1:] == [d + 1 for d in res.drafted[1:]]   # then the correction or bonus, and the new drafts


def test_sampled_speculative_decoding_runs_and_a_row_draft_adapter_fits(params, draft):
    target = new_model(params)
    res = speculative_generate(draft, target, some_ids(3), 20, gamma=4, temperature=1.0, rng=0)
    assert len(res.tokens) == 20
    as_draft = RowDraft(target.fresh())                      # a transformer as the draft, with its own cache
    res = speculative_generate(as_draft, target, some_ids(3), 10, gamma=2)
    assert res.tokens == autoregressive_generate(target.fresh(), some_ids(3), 10)
    assert res.accepted == res.drafted                       # the draft is the target: every draft accepted


# ---------------------------------------------------------------- the shipped weights
SHIPPED = os.path.join(os.path.dirname(transformer.__file__), "target_transformer.npz")
needs_weights = pytest.mark.skipif(not os.path.exists(SHIPPED), reason="no target_transformer.npz yet")


@needs_weights
def test_the_shipped_transformer_loads_fast_and_reads_the_mlps_vocabulary():
    from specdec.models import load_transformer

    t0 = time.perf_counter()
    model = load_transformer()
    assert time.perf_counter() - t0 < 1.0                    # ~0.1 s on an idle machine
    with np.load(os.path.join(os.path.dirname(SHIPPED), "target_mlp.npz")) as mlp:
        assert model.vocab.charset == "".join(chr(c) for c in mlp["charset"]) and model.V == 96
        assert model.start == int(mlp["pad"]) and model.context == 256
    ids = model.encode("The ")
    assert model.decode(ids) == "The " and model.probs_for_positions(ids, len(ids)).shape == (1, 96)


@needs_weights
@pytest.mark.slow
def test_the_shipped_transformer_decodes_speculatively_and_beats_the_mlp(models):
    from specdec.models import load_transformer
    from specdec.models.data import pydoc_text

    draft, mlp = models
    model = load_transformer()
    prompt = model.encode("The with statement")
    res = speculative_generate(draft, model, prompt, 300, gamma=4)   # past the 256-character context
    assert res.tokens == autoregressive_generate(load_transformer(), prompt, 300)
    ids = model.encode(pydoc_text())
    held = ids[int(len(ids) * 0.95):][:3000]
    nll = lambda m: -np.mean(np.log(m.probs_for_positions(held, 0)[np.arange(len(held)), held]))
    assert nll(model) < nll(mlp) - 0.05


def test_a_step_that_straddles_a_hop_then_returns_reuses_both_windows(params, counted):
    """Verification near a hop: a call whose rows straddle it (some in each window), a rejection, and a call back
    in the earlier window. Two windows are cached, so neither is recomputed; the rows equal the reference."""
    ids = some_ids(40)
    model = new_model(params)
    model.probs_for_positions(ids[:22], 22)                   # the cache holds window 8: ids[8:22]
    counted.clear()
    chain = ids[:22] + [9, 9, 9, 9]                           # rows t = 22..26: window 8 up to t = 24, then 16
    np.testing.assert_allclose(model.probs_for_positions(chain, 22), reference_rows(params, chain, 22),
                               atol=ATOL, rtol=0)
    assert counted == [2, 4]                                  # window 8: 2 new ids; window 16 (filled up to
    #                                                           the settled ids[:22]): 4
    counted.clear()
    back = ids[:23] + [7, 7]                                  # the second draft rejected: rows t = 23..25
    np.testing.assert_allclose(model.probs_for_positions(back, 23), reference_rows(params, back, 23),
                               atol=ATOL, rtol=0)
    assert counted == [2, 2]                                  # each window computes only what it lacks (the
    #                                                           settled ids[22] reached window 16 with the fill)
    model.keep(20)                                            # keep/rollback cut both windows
    assert model.cache_start == 16 and model.cached_ids == ids[16:20]   # the window used last, cut to ids[:20]
    np.testing.assert_allclose(model.probs_for_positions(ids[:30], 20), reference_rows(params, ids[:30], 20),
                               atol=ATOL, rtol=0)


# ---------------------------------------------------------------- the next window, filled as the text goes
def test_plain_decoding_past_many_hops_never_computes_a_window_and_keeps_its_rows(long_params, counted_long):
    """Context 32, hop 16: the fill chunk is 2 settled ids. One position at a time from t = 3 to 120 (six hops):
    after the prompt, every pass computes 1 row, and fills 0 or 2 (at most 3 at the first call of a window, which
    computes what the fill had not reached); every row equals the reference."""
    model = TransformerModel(long_params, HEADS, 32, 16, START)
    assert model.fill_chunk == 2
    ids = some_ids(120, seed=7)
    rows = [model.probs_for_positions(ids[:t], t)[0] for t in range(3, 121)]
    expected = np.concatenate([reference_rows_at(long_params, ids[:t], 32, 16) for t in range(3, 121)])
    np.testing.assert_allclose(np.array(rows), expected, atol=ATOL, rtol=0)
    assert counted_long[0] == 4 and max(counted_long[1:]) <= 2 and set(counted_long.filled) <= {0, 2, 3}
    assert sum(counted_long.filled) >= 100                          # the next windows were filled as the text went


def reference_rows_at(params, ids, context, hop):
    """reference_rows with another context and hop: p(. | ids) alone, [1, V]."""
    t, s = len(ids), 0
    while t - s > context:
        s += hop
    z = reference_logits(params, [START] + list(ids[s:t]))[-1]
    e = np.exp(z - z.max())
    return (e / e.sum())[None]


def test_a_verification_step_that_straddles_a_hop_finds_the_next_window_filled(long_params, counted_long):
    model = TransformerModel(long_params, HEADS, 32, 16, START)
    ids = some_ids(40, seed=8)
    for t in range(1, 31):                                     # decode to 30: window 16 holds the settled ids
        model.probs_for_positions(ids[:t], t)
    counted_long.clear()
    chain = ids[:30] + [1, 2, 3, 4, 5]                         # rows t = 30..35: window 0 to 32, window 16 after
    rows = model.probs_for_positions(chain, 30)
    # window 0 holds ids[:30]: 2 new (30, 31); window 16 holds the settled ids[16:30] (the fill): 5 new, 30..34
    assert counted_long == [2, 5]
    np.testing.assert_allclose(rows, np.concatenate([reference_rows_at(long_params, chain[:t], 32, 16)
                                                     for t in range(30, 36)]), atol=ATOL, rtol=0)


# ---------------------------------------------------------------- the folded pass against the pass as shipped
@needs_weights
@pytest.mark.slow
def test_the_folded_model_keeps_the_shipped_models_rows_and_greedy_text():
    """The shipped weights, the pass as first shipped (tests/unfolded_transformer.py, no folding, no fill): on
    700 held-out characters (past two hops) every row agrees to 1e-5 and every argmax is the same, whole text in
    one call and one position at a time; the greedy text of a 300-token continuation is the same."""
    from unfolded_transformer import load as load_unfolded

    from specdec.models import load_transformer
    from specdec.models.data import pydoc_text

    old, new = load_unfolded(SHIPPED), load_transformer()
    text = pydoc_text()
    ids = new.encode(text[int(len(text) * 0.95):][:700])
    a, b = old.probs_for_positions(ids, 0), new.probs_for_positions(ids, 0)
    assert np.abs(a - b).max() < 1e-5 and (a.argmax(1) == b.argmax(1)).all()
    old2, new2 = load_unfolded(SHIPPED), load_transformer()
    for t in range(230, 420):                                  # one at a time across the hop at 257
        pa, pb = old2.probs_for_positions(ids[:t], t), new2.probs_for_positions(ids[:t], t)
        assert np.abs(pa - pb).max() < 1e-5 and pa.argmax() == pb.argmax()
    prompt = ids[:40]
    assert autoregressive_generate(new.fresh(), prompt, 300) == autoregressive_generate(old.fresh(), prompt, 300)


# ---------------------------------------------------------------- what drafts read: features, an early exit
def test_features_give_the_rows_and_come_from_the_cache_or_the_last_tree(params, counted):
    model = new_model(params)
    model.keep_features = True
    ids = some_ids(9)
    rows = model.probs_for_positions(ids, 4)
    head = lambda f: reference_softmax(f @ params["head.w"] + params["head.b"])
    np.testing.assert_allclose(head(model.features_for_positions(ids, 4)), rows, atol=ATOL, rtol=0)
    calls = len(counted)
    np.testing.assert_allclose(head(model.features(ids[:6])), rows[2], atol=ATOL, rtol=0)
    parents, tokens = [-1, 0, -1], [3, 4, 5]
    tree_rows = model.probs_for_tree(ids, parents, tokens)
    np.testing.assert_allclose(head(model.features(ids + [3, 4])), tree_rows[2], atol=ATOL, rtol=0)
    assert len(counted) == calls + 1                          # both read without a call (the tree's one aside)
    np.testing.assert_allclose(head(model.features(ids + [7])), reference_rows(params, ids + [7], 10)[0],
                               atol=ATOL, rtol=0)             # not computed yet: one call
    with pytest.raises(ValueError, match="keep_features"):
        new_model(params).features(ids)


def reference_softmax(z):
    z = np.atleast_2d(z).astype(np.float64)
    e = np.exp(z - z.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True)).squeeze()


def test_an_early_exit_is_the_first_blocks_and_the_verification_resumes_them(params, counted):
    """The exit row equals the reference of the first block alone, with the final LayerNorm and head; the full
    call over the drafted positions computes only the last draft from block 0 (the rest resume at block 1), and
    its rows are the full reference."""
    first_block = {k: v for k, v in params.items() if not k.startswith("h1.")}
    model = new_model(params)
    ids = some_ids(6)
    exit_rows, drafts = [], []
    for _ in range(3):                                        # draft three ids greedily from the exit
        q = model.partial_probs(ids + drafts, 1)
        exit_rows.append(q)
        drafts.append(int(np.argmax(q)))
    for i, q in enumerate(exit_rows):
        np.testing.assert_allclose(q, reference_rows_n(first_block, 1, ids + drafts[:i]), atol=ATOL, rtol=0)
    assert counted == [7, 1, 1]                               # the prompt and two drafts, through block 0 only
    rows = model.probs_for_positions(ids + drafts, len(ids))
    assert counted[-1] == 1                                   # only the last draft is new at block 0
    np.testing.assert_allclose(rows, reference_rows(params, ids + drafts, len(ids)), atol=ATOL, rtol=0)
    np.testing.assert_allclose(model.partial_probs(ids[:4], 1), reference_rows_n(first_block, 1, ids[:4]),
                               atol=ATOL, rtol=0)             # a position the full cache holds: a scratch copy
    with pytest.raises(ValueError, match="blocks is 3"):
        model.partial_probs(ids, 3)


def reference_rows_n(p, layers, ids):
    """p(. | ids) [V] of the reference with `layers` blocks."""
    global LAYERS
    saved, LAYERS = LAYERS, layers
    try:
        return reference_rows(p, ids, len(ids))[0]
    finally:
        LAYERS = saved
