"""The two shipped models: vocabulary, n-gram arithmetic, MLP gradients, training, pretrained weights.

Independent references: hand-worked counts, a second (plain-Python, recursive)
implementation of the n-gram formula, central finite differences for the
backprop, the plain-Python `specdec.logits.softmax` for tempered rows, and the
training forward pass for the folded inference path.
"""

import math
import re

import numpy as np
import pytest

from specdec.logits import softmax
from specdec.models import mlp
from specdec.models.data import UNK, CharVocab, build_charset, pydoc_text
from specdec.models.distil import pack_soft, unpack_soft
from specdec.models.ngram import NGramModel
from specdec.models.train import CONFIG, Adam, mean_loss, train_mlp, windows_and_targets


@pytest.fixture(scope="module")
def corpus():
    return pydoc_text()


# ---------------------------------------------------------------- vocabulary
@pytest.mark.parametrize("text", [
    "",                                   # empty string
    "The assert statement\n",             # plain prose and a newline
    "x = {'a': [1, 2]}  # “quoted” — …",  # code punctuation and the typographic characters in the charset
])
def test_round_trip_inside_the_charset(models, text):
    _, target = models
    assert target.decode(target.encode(text)) == text


def test_unknown_characters_become_unk_and_ids_round_trip(models):
    _, target = models
    ids = target.encode("a\u00e9b")                       # é is not in the charset
    assert ids[1] == 0 and target.decode(ids) == "a" + UNK + "b"
    assert target.encode(target.decode(list(range(96)))) == list(range(96))  # every id round-trips


def test_decode_names_the_bad_position():
    with pytest.raises(ValueError, match=r"ids\[2\] is 7"):
        CharVocab("abc").decode([1, 2, 7])


def test_charset_is_the_most_frequent_characters():
    # 'a' x3, 'b' x2, 'c' x2, 'd' x1: size 3 keeps <unk> + 2 chars; the b/c tie goes to the lower code point
    assert build_charset("aaabbccd", size=3) == "ab"
    vocab = CharVocab(build_charset(pydoc_text()))
    assert len(vocab) == 96 and "\n" in vocab.charset and " " in vocab.charset and "e" in vocab.charset


# ---------------------------------------------------------------- n-gram draft
def witten_bell(ids, V, order, pad, context, rows=None, min_share=0.0):
    """Second implementation: the recursive formula evaluated straight from Python counts.

    With `rows` (rows[t] = the target's p(. | ids[:t])) it is the distilled model: a
    context's soft count of w sums rows[t][w] over the positions t it precedes, shares
    below min_share are dropped, and the dropped mass joins the backoff weight.
    """
    x = [pad] * (order - 1) + list(ids)
    grams = [tuple(x[i:i + order]) for i in range(len(x) - order + 1)]   # grams[t] ends with ids[t]

    def q(k, h):  # q_k(. | last k ids of h)
        if k == 0:
            c = [sum(1 for g in grams if g[-1] == w) for w in range(V)]
            return [(cw + 1) / (sum(c) + V) for cw in c]
        suffix = tuple(h[len(h) - k:])
        c = [sum(1 for g in grams if g[order - 1 - k:order - 1] == suffix and g[-1] == w) for w in range(V)]
        if sum(c) == 0:  # unseen context: back off
            return q(k - 1, h)
        distinct, total, lower = sum(1 for v in c if v), sum(c), q(k - 1, h)
        weight = distinct
        if rows is not None:
            at = [t for t, g in enumerate(grams) if g[order - 1 - k:order - 1] == suffix]
            soft = [sum(rows[t][w] for t in at) for w in range(V)]
            c = [s if s >= min_share * total else 0.0 for s in soft]
            weight = distinct + (total - sum(c))
        return [(c[w] + weight * lower[w]) / (total + distinct) for w in range(V)]

    ctx = ([pad] * (order - 1) + list(context))[-(order - 1):] if order > 1 else []
    return q(order - 1, ctx)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_ngram_table_matches_the_recursive_formula(order):
    rng = np.random.default_rng(order)
    ids = rng.integers(0, 4, 60).tolist()
    model = NGramModel.fit(ids, 5, order, pad=0)
    for context in ([], [1], [3, 2], [4, 4, 4], ids[:7], [2, 1, 0, 3]):  # incl. unseen id 4 and unseen contexts
        assert model.probs(context).tolist() == pytest.approx(witten_bell(ids, 5, order, 0, context), abs=1e-12)


def test_distilled_ngram_by_hand():
    # ids [1, 2, 1, 2], V 3, order 2, pad 0: the contexts (pad 0, 1, 2, 1) precede ids 1, 2, 1, 2.
    # Target rows: after 0 -> [0, 1, 0]; after 1 -> [0, .5, .5] and [0, .3, .7]; after 2 -> [.2, .8, 0].
    rows = [[0, 1, 0], [0, .5, .5], [.2, .8, 0], [0, .3, .7]]
    model = NGramModel.distil([1, 2, 1, 2], rows, 3, 2, pad=0)
    # Order 0 (hard, add-one): counts [0, 2, 2] -> [1, 3, 3] / 7.
    # Context 1: c = 2, T = 1 (only 2 followed it), soft s = [0, .8, 1.2], nothing dropped:
    # q = (s + 1 * [1, 3, 3] / 7) / 3 = [1/21, (5.6 + 3) / 21, (8.4 + 3) / 21]
    assert model.probs([1]).tolist() == pytest.approx([1 / 21, 8.6 / 21, 11.4 / 21], abs=1e-12)
    # Context 2: c = 1, T = 1, s = [.2, .8, 0] -> q = ([.2, .8, 0] + [1, 3, 3] / 7) / 2
    assert model.probs([2]).tolist() == pytest.approx([(1.4 + 1) / 14, (5.6 + 3) / 14, 3 / 14], abs=1e-12)
    # min_share 0.3: context 2 drops s(2, 0) = .2 < .3 * c = .3, so its backoff weight becomes
    # T + .2 = 1.2 and q = ([0, .8, 0] + 1.2 [1, 3, 3] / 7) / 2 (context 1 keeps .8 and 1.2 >= .6)
    model = NGramModel.distil([1, 2, 1, 2], rows, 3, 2, pad=0, min_share=0.3)
    assert model.probs([2]).tolist() == pytest.approx([1.2 / 14, (5.6 + 3.6) / 14, 3.6 / 14], abs=1e-12)


@pytest.mark.parametrize("order, min_share", [(2, 0.0), (3, 0.05), (4, 0.2)])
def test_distilled_ngram_matches_the_recursive_formula(order, min_share):
    rng = np.random.default_rng(10 + order)
    ids = rng.integers(0, 4, 60).tolist()
    rows = rng.dirichlet(np.full(5, 0.5), size=60)        # a made-up target: any rows summing to 1
    model = NGramModel.distil(ids, rows, 5, order, pad=0, min_share=min_share)
    table = model.dense_table()
    assert table.min() > 0 and np.allclose(table.sum(1), 1.0, rtol=0, atol=1e-12)
    for context in ([], [1], [3, 2], [4, 4, 4], ids[:7], [2, 1, 0, 3]):  # incl. unseen id 4 and unseen contexts
        expected = witten_bell(ids, 5, order, 0, context, rows.tolist(), min_share)
        assert model.probs(context).tolist() == pytest.approx(expected, abs=1e-12)


def test_packed_soft_counts_round_trip():
    # shares are stored floored to 1/255: 0.5 -> 127/255, 0.999 -> 254/255; keys and lengths exactly
    soft = (np.array([5 * 3 + 1, 7 * 3 + 2, 2 * 3 + 0]), np.array([2, 2, 1]), np.array([0.5, 0.999, 0.02]))
    keys, lengths, share = unpack_soft(pack_soft(soft, 3), 3)
    assert keys.tolist() == [16, 23, 6] and lengths.tolist() == [2, 2, 1]
    assert share.tolist() == pytest.approx([127 / 255, 254 / 255, 5 / 255], abs=1e-15)


def test_soft_counts_name_a_bad_shape():
    with pytest.raises(ValueError, match=r"target_rows has shape \(2, 3\), expected \(3, 3\)"):
        NGramModel.distil([1, 2, 1], [[0, 1, 0], [1, 0, 0]], 3, 2)


def test_ngram_rows_are_positive_distributions(models):
    draft = models[0].ngram   # the n-gram behind the shipped TopKDraft, with its full rows
    sample = np.random.default_rng(7).choice(len(draft.table), 500, replace=False)   # incl. row 0 half the time
    rows = draft.table[sample]
    assert rows.min() > 0                                 # every token possible: p/q never divides by 0
    assert np.allclose(rows.sum(1), 1.0, rtol=0, atol=1e-12)
    tempered = draft.tempered_table(0.5)
    row = draft.table[123]
    assert tempered[123] == pytest.approx(row ** 2 / (row ** 2).sum(), abs=1e-12)   # q^(1/T), T = 0.5


# ---------------------------------------------------------------- lazy rows = the dense table, bit for bit
@pytest.mark.parametrize("distilled", [False, True])
def test_lazy_rows_equal_the_dense_table_on_a_small_model(distilled):
    # every row of a small order-4 model: the lazy recursion along each suffix chain must give
    # exactly (array_equal, not approx) what the all-rows-at-once construction gives
    rng = np.random.default_rng(21)
    ids = rng.integers(0, 6, 400).tolist()
    rows = rng.dirichlet(np.full(7, 0.5), size=400)
    model = NGramModel.distil(ids, rows, 7, 4, min_share=0.05) if distilled else NGramModel.fit(ids, 7, 4)
    dense = model.dense_table()
    assert len(model.table) == len(dense) > 100
    order = rng.permutation(len(dense))               # any visiting order: long contexts before their suffixes
    lazy = np.empty_like(dense)
    lazy[order] = model.table[order]
    assert np.array_equal(lazy, dense)
    assert dense.min() > 0 and np.allclose(dense.sum(1), 1.0, rtol=0, atol=1e-12)
    assert np.array_equal(model.tempered_table(0.6)[np.arange(len(dense))], model.dense_table(temperature=0.6))
    assert np.array_equal(model.dense_table(rows=order[:9]), dense[order[:9]])  # restricted build: same rows


@pytest.mark.slow
def test_lazy_rows_of_the_shipped_draft_equal_a_dense_build(models):
    draft = models[0].ngram
    sample = np.random.default_rng(3).choice(len(draft.table), 500, replace=False)
    dense = draft.dense_table(rows=sample)            # built order by order for these rows and their suffixes only
    lazy = draft.table[sample]
    assert np.array_equal(lazy, dense)
    assert lazy.min() > 0 and np.allclose(lazy.sum(1), 1.0, rtol=0, atol=1e-12)
    assert np.array_equal(draft.tempered_table(0.7)[sample], draft.dense_table(rows=sample, temperature=0.7))
    # cached and read-only: the same array object on every use, and nobody can change it
    assert draft.table[int(sample[0])] is draft.table[int(sample[0])]
    assert not draft.table[int(sample[0])].flags.writeable


@pytest.mark.slow
def test_shipped_argmaxes_are_the_argmaxes_of_the_rows(models, corpus):
    # `best` ships with the draft (one id per row, from the dense table at training time); argmax_next reads
    # it instead of building a row. It must be argmax q itself, ties to the lowest id, for rows and contexts.
    (draft, target), draft = models, models[0].ngram
    sample = np.random.default_rng(5).choice(len(draft.table), 2000, replace=False)
    assert [draft._best[r] for r in sample] == draft.dense_table(rows=sample).argmax(1).tolist()
    starts = np.random.default_rng(6).integers(0, len(corpus) - 20, 300)
    contexts = [target.encode(corpus[s:s + int(n)]) for s, n in zip(starts, starts % 12)] + [[], [0] * 9]
    assert [draft.argmax_next(c) for c in contexts] == draft.next_token_probs(contexts).argmax(1).tolist()


def test_a_draft_without_stored_argmaxes_finds_the_same_ones():
    rng = np.random.default_rng(8)
    ids = rng.integers(0, 5, 300).tolist()
    lazy = NGramModel.distil(ids, rng.dirichlet(np.full(6, 0.3), size=300), 6, 3, min_share=0.05)
    shipped = NGramModel(lazy.keys, lazy.counts, 6, 3, soft=lazy.soft, best=lazy.dense_table().argmax(1))
    for context in ([], [5], [1, 2], [4, 4, 4], ids[:20]):
        assert lazy.argmax_next(context) == shipped.argmax_next(context) == int(np.argmax(lazy.probs(context)))
    with pytest.raises(ValueError, match="best must hold"):
        NGramModel(lazy.keys, lazy.counts, 6, 3, soft=lazy.soft, best=[0, 1])      # one id per row, not two
    with pytest.raises(ValueError, match="best must hold"):
        NGramModel(lazy.keys, lazy.counts, 6, 3, soft=lazy.soft, best=np.full(len(lazy.table), 6))  # id >= V


@pytest.mark.parametrize("context, position", [([1, 2, 300], 2), ([1, -1], 1), ([0.5], 0)])
def test_a_bad_context_id_is_named(models, context, position):
    draft = models[0].ngram
    with pytest.raises(ValueError, match=rf"context\[{position}\] is"):
        draft.argmax_next(context)


def test_greedy_cache_keys_do_not_mix_contexts(models):
    # row_index looks a full context up by the bytes of its last order - 1 ids; a numpy array of wide ints
    # has other bytes (an int64 [x] and an int32 [x, 0] share theirs), so every form must give argmax q itself
    (draft, target), draft = models, models[0].ngram
    for text in ["The ", "e", "", "def f(x):\n    return", "\x00\x01"]:
        ids = target.encode(text)
        expected = int(np.argmax(draft.probs(ids)))        # ties: the lowest id, as argmax_next
        for form in (ids, np.array(ids, np.int64), np.array(ids + [0], np.int32)[:len(ids)], ids):
            assert draft.argmax_next(form) == expected, (text, type(form))
    # an int64 [x] has the bytes of an int32 [x, 0] (x followed by <unk>): for every x whose two contexts have
    # different argmaxes, a cache keyed by raw bytes would answer the second with the first
    differ = [(x, int(np.argmax(draft.probs([x]))), int(np.argmax(draft.probs([x, 0])))) for x in range(1, draft.V)]
    differ = [(x, one, two) for x, one, two in differ if one != two]
    assert len(differ) >= 5
    for x, one, two in differ:
        assert draft.argmax_next(np.array([x], np.int64)) == one
        assert draft.argmax_next(np.array([x, 0], np.int32)) == two


# ---------------------------------------------------------------- MLP target: gradients and training
def test_backprop_matches_finite_differences():
    rng = np.random.default_rng(0)
    params = {k: v.astype(np.float64) for k, v in mlp.init_params(7, 3, 2, 5, seed=1).items()}
    params["W2"] = rng.standard_normal(params["W2"].shape)   # a head large enough to matter
    X = np.array([[1, 2, 3], [3, 3, 0], [6, 1, 1], [2, 2, 2]])  # repeated ids: the embedding gradient accumulates
    y = np.array([4, 0, 6, 2])
    _, grads = mlp.loss_and_grads(params, X, y)
    eps = 1e-6
    for name, value in params.items():
        for idx in np.ndindex(value.shape):
            old = value[idx]
            value[idx] = old + eps
            up = mlp.loss_and_grads(params, X, y)[0]
            value[idx] = old - eps
            down = mlp.loss_and_grads(params, X, y)[0]
            value[idx] = old
            assert grads[name][idx] == pytest.approx((up - down) / (2 * eps), abs=1e-7), f"{name}{idx}"


def test_adam_first_step_moves_each_weight_by_lr():
    # bias-corrected m / sqrt(v) = g / |g| on the first step, so the update is -lr * sign(g)
    adam = Adam({"w": np.array([1.0, 1.0, 1.0])}, lr=0.01)
    adam.step({"w": np.array([3.0, -0.5, 1e-3])})
    assert adam.params["w"] == pytest.approx([0.99, 1.01, 0.99], abs=1e-6)


def test_weight_decay_shrinks_matrices_only():
    # zero gradient: Adam's step is 0, decay alone moves W by lr * wd * W = 0.1 * 0.5 * 2 = 0.1; b (1-D) stays
    adam = Adam({"W": np.full((1, 1), 2.0), "b": np.array([2.0])}, lr=0.1, weight_decay=0.5)
    adam.step({"W": np.zeros((1, 1)), "b": np.zeros(1)})
    assert adam.params["W"][0, 0] == pytest.approx(1.9) and adam.params["b"][0] == 2.0


def test_training_loss_falls(corpus):
    vocab = CharVocab(build_charset(corpus))
    ids = vocab.encode(corpus[:5000])
    params, losses = train_mlp(ids, len(vocab), context=4, embed=8, hidden=32, steps=150, batch=64, lr=1e-2)
    assert losses[0] == pytest.approx(math.log(96), abs=0.1)   # small head: uniform at the start
    assert np.mean(losses[-20:]) < losses[0] - 1.0


def test_folded_inference_equals_the_training_forward(models):
    _, target = models
    ids = target.encode("Assignment statements are used to (re)bind names")
    windows = target.windows(ids, 0)                        # every position, incl. padded ones at the start
    logits = target.logits(windows)
    p = target.params
    direct = np.tanh(p["E"][windows].reshape(len(windows), -1) @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
    assert np.allclose(logits, direct, atol=1e-4)


# ---------------------------------------------------------------- pretrained models
def test_pretrained_models_share_a_vocabulary(models):
    (draft, target), draft = models, models[0].ngram
    assert draft.V == target.V == 96 and draft.vocab.charset == target.vocab.charset
    assert target.params["W1"].shape == (16 * 24, CONFIG["hidden"]) and draft.order == 7 and draft.soft is not None


def test_probability_rows_sum_to_one(models):
    draft, target = models
    contexts = [target.encode(s) for s in ["", "T", "The ", "def f(x):\n    return", "\n\n\n"]]
    for model in (draft, target):
        for temperature in (1.0, 0.7, 2.0):
            rows = model.next_token_probs(contexts, temperature)
            assert rows.shape == (5, 96) and rows.min() >= 0
            assert np.allclose(rows.sum(1), 1.0, atol=1e-12)


def test_one_call_for_all_positions_equals_one_call_per_position(models):
    draft, target = models
    ids = target.encode("The simple form, \"assert expression\", is equivalent to")
    start = 20
    batched = target.probs_for_positions(ids, start)        # [len(ids) - start + 1, V]
    single = np.concatenate([target.next_token_probs([ids[:t]]) for t in range(start, len(ids) + 1)])
    assert batched.shape == (len(ids) - start + 1, 96)
    assert np.array_equal(batched, single)   # one matrix-vector product per position: the same rounding
    draft_rows = np.stack([draft.probs(ids[:t]) for t in range(start, len(ids) + 1)])
    assert np.array_equal(draft_rows, draft.next_token_probs([ids[:t] for t in range(start, len(ids) + 1)]))


def test_target_temperature_is_softmax_of_logits_over_t(models):
    _, target = models
    ids = target.encode("The ")
    logits = target.logits(target.windows(ids, len(ids)))[0]
    for temperature in (0.5, 1.0, 1.5):
        row = target.probs_for_positions(ids, len(ids), temperature)[0]
        assert row.tolist() == pytest.approx(softmax(logits.tolist(), temperature), abs=1e-12)


def test_probs_for_positions_rejects_a_bad_start(models):
    _, target = models
    with pytest.raises(ValueError, match="start is 5"):
        target.probs_for_positions([1, 2, 3], 5)


@pytest.mark.slow
def test_target_learned_english(models, corpus):
    (_, target), draft = models, models[0].ngram      # the uncut n-gram: every q > 0
    vocab = target.vocab
    held_out = vocab.encode(corpus)[int(len(corpus) * 0.95):]
    X, y = windows_and_targets(held_out, target.context, target.pad)
    loss = mean_loss(target.params, X, y)
    # uniform guessing would be log 96 = 4.56 nats/char; 2048 hidden units reached 1.175, the shipped 896 1.200
    assert loss < 1.3
    # and it beats the order-7 n-gram draft by a clear margin: the MLP earns its cost
    q = draft.next_token_probs([held_out[max(0, t - 6):t] for t in range(len(held_out))])
    assert loss < -np.mean(np.log(q[np.arange(len(held_out)), held_out])) - 0.15
    # greedy continuation: most of its words are words of the corpus
    from specdec.generation.decode import autoregressive_generate
    text = target.decode(autoregressive_generate(target, target.encode("The "), 200))
    words = re.findall(r"[A-Za-z]+", text)
    known = set(re.findall(r"[A-Za-z]+", corpus))
    assert len(words) >= 20 and sum(w in known for w in words) / len(words) > 0.8


# ---------------------------------------------------------------- the memory-bound stand-in (lesson 09's simulation)
@pytest.mark.parametrize("mode", ["stream", "matmul"])
def test_stand_in_returns_exactly_the_targets_outputs(models, mode):
    from specdec.generation.decode import speculative_generate
    from specdec.models.standin import MemoryBoundTarget
    draft, target = models
    big = MemoryBoundTarget(target, megabytes=3, mode=mode)
    assert big.W.nbytes == 3 * 2 ** 20 and big.megabytes == 3 and big.V == target.V   # 2048 x 384 float32
    ids = target.encode("The simple form, \"assert expression\", is")
    for temperature in (1.0, 0.6):
        for start in (len(ids), len(ids) - 4, 0):      # 1, 5 and every position
            assert np.array_equal(big.probs_for_positions(ids, start, temperature),
                                  target.probs_for_positions(ids, start, temperature))
        contexts = [ids[:5], ids, []]
        assert np.array_equal(big.next_token_probs(contexts, temperature),
                              target.next_token_probs(contexts, temperature))
        parents, nodes = [-1, -1, 0, 0, 1], [3, 7, 1, 2, 9]              # a small draft tree
        assert np.array_equal(big.probs_for_tree(ids, parents, nodes, temperature),
                              target.probs_for_tree(ids, parents, nodes, temperature))
    assert big.decode(big.encode("abc")) == "abc"
    prompt = target.encode("If the ")
    mine, theirs = (speculative_generate(draft, t, prompt, 30, 4, 0.8, rng=5) for t in (big, target))
    assert mine.tokens == theirs.tokens and mine.accepted == theirs.accepted
    mine, theirs = (speculative_generate(draft, t, prompt, 30, 2, 0.8, rng=5, verify="tree", width=2)
                    for t in (big, target))
    assert mine.tokens == theirs.tokens and mine.accepted == theirs.accepted
    with pytest.raises(ValueError, match="start is 99"):   # the target's own check, before any traffic
        big.probs_for_positions(ids, 99)


def test_stand_in_rejects_bad_arguments(models):
    from specdec.models.standin import MemoryBoundTarget
    _, target = models
    with pytest.raises(ValueError, match="mode is 'gpu'"):
        MemoryBoundTarget(target, 1, mode="gpu")
    with pytest.raises(ValueError, match="megabytes is 0"):
        MemoryBoundTarget(target, 0)


def test_row_index_is_the_row_of_the_longest_seen_suffix():
    """Against a reference built here from the n-grams: contexts of length k seen in the counts, sorted, rows
    numbered order 0 first, then by length and key. Random contexts over a small vocabulary miss at every length."""
    rng = np.random.default_rng(0)
    V, n = 6, 4
    ids = rng.integers(0, V, 300).tolist()
    model = NGramModel.fit(ids, vocab_size=V, order=n)
    contexts_by_length = [np.zeros(1, np.int64)] + [np.unique((model.keys // V) % V ** k) for k in range(1, n)]
    offsets = np.cumsum([0] + [len(c) for c in contexts_by_length])
    for _ in range(2000):
        context = rng.integers(0, V, rng.integers(n - 1, 9)).tolist()
        want = 0
        for k in range(1, n):   # the longest suffix whose every shorter suffix is seen too
            key = sum(t * V ** j for j, t in enumerate(reversed(context[-k:])))
            at = np.searchsorted(contexts_by_length[k], key)
            if at == len(contexts_by_length[k]) or contexts_by_length[k][at] != key:
                break
            want = int(offsets[k] + at)
        assert model.row_index(context) == want, context
