"""Where drafts come from (lesson 13): prompt lookup, Medusa heads, an early exit, trees of a draft's own shape,
gamma="auto", and each timed side's fresh cache.

Independent references: hand-worked lookups and trees, finite differences for the heads' gradients, the target's
own greedy decoding (every draft at T = 0), the target's own first- and second-token distributions (a fixed-seed
statistical test with a stated tolerance, on a tiny transformer, which typical acceptance on a tree fails), a
chooser fed synthetic costs whose best gamma is computed by hand, and a count of the positions each side computes.
"""

import numpy as np
import pytest

from specdec.generation import adaptive
from specdec.generation.decode import autoregressive_generate, speculative_generate, typical_tree_rule
from specdec.generation.interface import RowDraft
from specdec.generation.measure import compare
from specdec.generation.trees import ThresholdTreeDraft, full_tree, threshold_tree
from specdec.models import transformer
from specdec.models.early_exit import EarlyExitDraft
from specdec.models.heads import HeadsDraft, MedusaHeads
from specdec.models.lookup import PromptLookupDraft
from specdec.models.train_heads import loss_and_grads
from specdec.models.transformer import TransformerModel, init_params
from specdec.theory import expected_tokens_per_step

V, D = 6, 16


def tiny(seed, scale=0.4, layers=2):
    """A tiny transformer target (V = 6, d = 16, context 16, hop 8) with weights far from uniform rows."""
    rng = np.random.default_rng(seed)
    p = init_params(V, 16, D, layers, seed=seed)
    return TransformerModel({k: (v + rng.standard_normal(v.shape) * scale).astype(np.float32) for k, v in p.items()},
                            n_head=2, context=16, hop=8, start=0)


def near(model, seed=5, scale=0.15):
    """A draft that mostly agrees with `model`: its weights with noise, through RowDraft."""
    rng = np.random.default_rng(seed)
    return RowDraft(TransformerModel({k: (v + rng.standard_normal(v.shape) * scale).astype(np.float32)
                                      for k, v in model.params.items()}, 2, 16, 8, 0))


def random_heads(K=3, seed=0):
    rng = np.random.default_rng(seed)
    params = {}
    for k in range(1, K + 1):
        params.update({f"{k}.w": rng.standard_normal((D, D)) * 0.3, f"{k}.b": rng.standard_normal(D) * 0.1,
                       f"{k}.head_w": rng.standard_normal((D, V)), f"{k}.head_b": rng.standard_normal(V) * 0.1})
    return MedusaHeads(params)


@pytest.fixture(scope="module")
def target():
    return tiny(0)


PROMPT = [1, 2, 3, 1, 2, 4, 5, 1, 2]


# ---------------------------------------------------------------- prompt lookup
def test_prompt_lookup_takes_the_longest_suffix_seen_and_its_latest_place():
    lookup = PromptLookupDraft(V=10, max_n=3, min_n=1)
    assert lookup.match([1, 2, 3, 9, 2, 3, 7, 2, 3]) == (4, 2)      # "2 3" last seen at 4 (then 7), not at 1
    assert lookup.chain([1, 2, 3, 9, 2, 3, 7, 2, 3], 4, 0.0, None)[0] == [7, 2, 3]   # up to the text's end
    assert lookup.chain([5, 6, 5], 3, 0.0, None)[0] == [6, 5]        # "5", min_n 1: the continuation of the 1st
    assert PromptLookupDraft(V=10, min_n=2).chain([5, 6, 5], 3, 0.0, None) == ([], None)
    with pytest.raises(ValueError, match="V must be in"):
        PromptLookupDraft(V=300)


@pytest.mark.parametrize("make", ["lookup", "heads", "early exit", "heads tree", "threshold tree", "auto"])
def test_every_draft_at_temperature_0_is_the_targets_greedy_decoding(target, make):
    model = target.fresh()
    draft, kw = {"lookup": (PromptLookupDraft(V, min_n=1), {}),
                 "heads": (HeadsDraft(model, random_heads()), {}),
                 "early exit": (EarlyExitDraft(model, 1), {}),
                 "heads tree": (HeadsDraft(model, random_heads(), threshold=0.05), {"verify": "tree", "width": 3}),
                 "threshold tree": (ThresholdTreeDraft(near(target), 0.05), {"verify": "tree", "width": 2}),
                 "auto": (near(target), {})}[make]
    gamma = "auto" if make == "auto" else 3
    res = speculative_generate(draft, model, PROMPT, 60, gamma, **kw)          # 69 ids: past six hops
    assert res.tokens == autoregressive_generate(target.fresh(), PROMPT, 60)
    assert sum(res.accepted) < sum(res.drafted)
    if make in ("lookup", "early exit", "threshold tree", "auto"):
        assert sum(res.accepted) > 0


# ---------------------------------------------------------------- heads
def test_the_heads_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    params = {k: v.astype(np.float64) for k, v in {"1.w": rng.standard_normal((4, 4)), "1.b": rng.standard_normal(4),
                                                   "1.head_w": rng.standard_normal((4, 5)),
                                                   "1.head_b": rng.standard_normal(5)}.items()}
    f = rng.standard_normal((3, 4))
    y = rng.dirichlet(np.ones(5), 3)                          # soft targets: the target's rows
    _, grads = loss_and_grads(params, 1, f, y)
    for name, value in params.items():
        for idx in np.ndindex(value.shape):
            old = value[idx]
            value[idx] = old + 1e-6
            up = loss_and_grads(params, 1, f, y)[0]
            value[idx] = old - 1e-6
            down = loss_and_grads(params, 1, f, y)[0]
            value[idx] = old
            assert grads[name][idx] == pytest.approx((up - down) / 2e-6, abs=1e-7), f"{name}{idx}"


def test_heads_read_the_hidden_state_that_gave_the_last_id(target):
    model = target.fresh()
    heads = random_heads()
    draft = HeadsDraft(model, heads)
    assert model.keep_features
    assert draft.rows(PROMPT, 1.0) is None and draft.chain(PROMPT, 3, 1.0, None) == ([], [])   # not computed yet
    model.probs_for_positions(PROMPT[:-1], len(PROMPT) - 1)
    rows = draft.rows(PROMPT, 1.0)
    f = model.features(PROMPT[:-1])
    a = f @ heads.w[1] + heads.b[1]
    z = (f + a / (1 + np.exp(-a))) @ heads.head_w[1] + heads.head_b[1]   # head 2, written out
    np.testing.assert_allclose(rows[1], np.exp(z - z.max()) / np.exp(z - z.max()).sum(), rtol=1e-5)
    tokens, q = draft.chain(PROMPT, 5, 0.0, None)
    assert tokens == rows.argmax(1).tolist() and q is None      # K = 3 heads: at most 3 drafts


# ---------------------------------------------------------------- trees of a draft's own shape
def test_a_threshold_tree_by_hand():
    q = {(): [0.0, 0.6, 0.3, 0.1], (1,): [0.9, 0.1, 0.0, 0.0], (2,): [0.0, 0.0, 0.5, 0.5]}
    rows = lambda paths: [np.array(q.get(tuple(p), [0.25] * 4)) for p in paths]
    tokens, parents, q_rows, contexts = threshold_tree(rows, 0.15, 2, 3, 0.0, None)
    # 1 (0.6) and 2 (0.3), not 3 (0.1); under 1: 0 (0.54); under 2: 2 and 3 (0.15 each)
    assert (tokens, parents, contexts) == ([1, 2, 0, 2, 3], [-1, -1, 0, 1, 1], 3)
    assert q_rows[0] is not None and q_rows[3] is None         # row 0 the root's, node 2 (a leaf) has none
    full = full_tree(RowDraft(tiny(1)), [1, 2], 2, 2, 0.0, None)
    assert len(full[0]) == 6 and full[3] == 3


def test_typical_acceptance_on_a_tree_keeps_the_path_that_keeps_most():
    # root row: 0.5 / 0.5 over ids 0, 1 (bar 0.09: both pass); node 0 (id 0) has a child 1 that p there gives 0.01
    p_rows = np.array([[0.5, 0.5, 0, 0], [0.01, 0.01, 0.98, 0], [0.1, 0.1, 0.4, 0.4], [0.2, 0.2, 0.2, 0.4]])
    tokens, parents = [0, 1, 1], [-1, -1, 0]                   # node 0 = 0, node 1 = 1, node 2 = 1 under node 0
    # both paths keep one draft (0 -> 1 stops at the 1, p = 0.01): the earlier leaf, node 1, wins; then argmax of its
    # row, 2
    assert typical_tree_rule(tokens, parents, p_rows) == ([1], 2)
    p_rows[1] = [0.01, 0.6, 0.39, 0]
    assert typical_tree_rule(tokens, parents, p_rows) == ([0, 2], 3)  # both kept; the bonus: argmax of node 2's row


# ---------------------------------------------------------------- lossless at T = 1 (a tiny target: fast calls)
N_RUNS = 3000
# With V = 6 and N = 3000 runs the expected total-variation distance between an empirical distribution and p is
# about 0.5 sqrt(2 / (pi N)) sum_x sqrt(p(x)(1 - p(x))) <= 0.5 * 0.0146 * sqrt(6 * 5) = 0.040 (at a uniform p;
# ~0.02 for these rows). TV_TOL = 0.06. Power: the drafts alone are far from p (asserted), and typical
# acceptance, which is not lossless, fails.
TV_TOL = 0.06


def tv(counts, probs):
    return 0.5 * np.abs(counts / counts.sum() - probs).sum()


@pytest.mark.slow
@pytest.mark.parametrize("make", ["lookup", "heads chain", "heads tree", "early exit", "threshold tree",
                                  "typical_tree"])
def test_sampled_text_follows_the_target_for_every_draft_kind(target, make):
    prompt = [1, 2, 3, 1, 2]                                   # "1 2" seen before: the lookup proposes "3 1"
    other = near(target, scale=0.6)
    model = target.fresh()
    draft, kw = {"lookup": (PromptLookupDraft(V, min_n=1), {}),
                 "heads chain": (HeadsDraft(model, random_heads()), {}),
                 "heads tree": (HeadsDraft(model, random_heads(), threshold=0.05), {"verify": "tree", "width": 3}),
                 "early exit": (EarlyExitDraft(model, 1), {}),
                 "threshold tree": (ThresholdTreeDraft(other, 0.05), {"verify": "tree", "width": 3}),
                 "typical_tree": (ThresholdTreeDraft(other, 0.05), {"verify": "typical_tree", "width": 3})}[make]
    rng = np.random.default_rng(7)
    first, second = np.zeros(V), np.zeros(V)
    for _ in range(N_RUNS):
        toks = speculative_generate(draft, model, prompt, 2, 2, 1.0, rng, **kw).tokens
        first[toks[0]] += 1
        second[toks[1]] += 1
    p1 = target.probs_for_positions(prompt, len(prompt))[0]
    p2 = p1 @ target.next_token_probs([prompt + [x] for x in range(V)])
    assert 0.5 * np.abs(other.next_token_probs([prompt])[0] - p1).sum() > 0.2    # the test has power
    lossless = make != "typical_tree"
    assert (tv(first, p1) < TV_TOL) == lossless and (tv(second, p2) < TV_TOL) == lossless


# ---------------------------------------------------------------- gamma="auto"
def test_the_chooser_explores_then_takes_the_best_gamma_by_theory():
    """Calls cost 1 + 0.25 n (ms), a draft step 0.01 ms, every draft accepted with 0.8: theory(c, r) =
    E(0.8, g) / ((1 + 0.25 (g + 1)) / 1.25 + 0.008 g), best at the g computed here by hand."""
    chooser = adaptive.GammaChooser(max_gamma=8)
    rng = np.random.default_rng(0)
    first = [chooser.next_gamma() for _ in range(0)]
    assert first == []
    seen = []
    for step in range(200):
        g = chooser.next_gamma()
        seen.append(g)
        accepted = int((rng.random(g) < 0.8).cumprod().sum())
        chooser.record(g, g + 1, (1 + 0.25 * (g + 1)) * 1e-3, 1e-5 * g, accepted, accepted + (accepted < g))
    best = max(range(1, 9), key=lambda g: expected_tokens_per_step(0.8, g) / ((1 + 0.25 * (g + 1)) / 1.25 + 0.008 * g))
    assert seen[:3] == [1, 4, 8]
    assert chooser.best() == best and seen[-20:].count(best) >= 15
    assert chooser.next_gamma(remaining=1) == 1
    with pytest.raises(ValueError, match="max_gamma"):
        adaptive.GammaChooser(max_gamma=0)
    with pytest.raises(ValueError, match="gamma='auto' chooses a chain"):
        speculative_generate(RowDraft(tiny(1)), tiny(0), [1], 3, "auto", verify="tree")


# ---------------------------------------------------------------- compare: each side its own cache
def test_each_side_of_a_comparison_computes_its_prompt(monkeypatch, target):
    computed, real = [], transformer.forward
    model = target.fresh()
    def counting(weights, layers, tokens, *args):
        if weights is model.folded:
            computed.append(len(tokens))
        return real(weights, layers, tokens, *args)

    monkeypatch.setattr(transformer, "forward", counting)
    prompt = [1, 2, 3, 4, 5, 1, 2]
    compare(near(target), model, [prompt, prompt], [2], 3)
    firsts = [n for n in computed if n >= len(prompt)]       # the first pass of each side holds the whole prompt
    assert len(firsts) == 4                                  # 2 prompts x 2 sides: none found the other's cache
