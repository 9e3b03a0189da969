"""Speculative generation with the shipped models against plain decoding (specdec.generation.decode).

Independent references: greedy autoregressive decoding (token for token, for every rule at
T = 0), the target's own next-token distributions (fixed-seed statistical tests with a stated
tolerance, which typical acceptance fails), a replay of greedy drafting against plain greedy
decoding and a count of the accept tests actually made (for alpha), the target's rows for
explicit contexts (for tree scoring), and bookkeeping identities worked out in each docstring.
The rules on NumPy rows are checked against the plain-Python functions in test_rules.py; the command line
(`python -m specdec generate`) in test_specdec_cli.py.
"""

import numpy as np
import pytest

from specdec import rules
from specdec.generation.decode import autoregressive_generate, speculative_generate
from specdec.generation.interface import Draft, RowDraft, Target
from specdec.models import load_pretrained


@pytest.fixture(scope="module")
def prompts(models):
    from specdec.models.data import pydoc_text
    text = pydoc_text()
    # 12 prompts: the empty prompt, a one-character one, and slices of the corpus at fixed offsets
    return [[], models[1].encode("T")] + [models[1].encode(text[i:i + 24]) for i in range(0, 400_000, 40_000)]


@pytest.mark.parametrize("verify, gamma, width", [
    ("token", 1, None), ("token", 2, None), ("token", 4, None), ("token", 7, None),
    ("block", 3, None), ("greedy", 3, None), ("typical", 3, None),
    ("tree", 1, 3), ("tree", 2, 2), ("tree", 4, 2), ("tree", 3, 1),
])
def test_greedy_speculative_equals_greedy_decoding(models, prompts, verify, gamma, width):
    draft, target = models
    options = {"width": width} if width else {}
    for prompt in prompts:
        res = speculative_generate(draft, target, prompt, 40, gamma, verify=verify, **options)
        assert res.tokens == autoregressive_generate(target, prompt, 40), target.decode(prompt)


def test_gamma_zero_is_plain_decoding(models):
    draft, target = models
    prompt = target.encode("The ")
    res = speculative_generate(draft, target, prompt, 15, gamma=0)
    assert res.tokens == autoregressive_generate(target, prompt, 15)
    assert res.target_calls == 15 and res.draft_calls == 0 and not any(res.from_draft)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_statistics_add_up(models, temperature):
    """Each target call emits its accepted drafts plus one token, so
    len(tokens) = sum(accepted) + target_calls = max_new_tokens, and draft_calls = sum(drafted)."""
    draft, target = models
    res = speculative_generate(draft, target, target.encode("Assignment "), 101, 4, temperature, rng=3)
    assert len(res.tokens) == 101 == sum(res.accepted) + res.target_calls
    assert res.draft_calls == sum(res.drafted) and len(res.accepted) == res.target_calls
    assert all(0 <= a <= d <= 4 for a, d in zip(res.accepted, res.drafted))
    assert sum(res.from_draft) == sum(res.accepted) and len(res.from_draft) == 101
    assert res.scored == [d + 1 for d in res.drafted]
    assert res.tokens_per_call == 101 / res.target_calls


def test_greedy_alpha_against_a_replay(models):
    """Replay greedy drafting against plain greedy decoding, outside decode: at each call the draft
    proposes argmax q after the text so far; drafts are compared with the target's greedy tokens until
    the first mismatch (tested, not accepted) or until g = min(gamma, tokens left - 1) were accepted."""
    draft, target = models
    prompt, n, gamma = target.encode("Assignment "), 101, 4
    plain = autoregressive_generate(target, prompt, n)
    accepted, tested, pos = [], 0, 0
    while pos < n:
        g, a = min(gamma, n - pos - 1), 0
        while a < g and draft.argmax_next(prompt + plain[:pos + a]) == plain[pos + a]:
            a += 1
        accepted.append(a)
        tested += a + (a < g)
        pos += a + 1
    res = speculative_generate(draft, target, prompt, n, gamma)
    assert res.accepted == accepted
    assert res.alpha == sum(accepted) / tested and 0 < res.alpha < 1


def test_sampled_alpha_counts_the_accept_tests_made(models, monkeypatch):
    # every accept test the token rule makes goes through rules.token_accepts: count them and their passes
    calls = []
    real = rules.token_accepts
    monkeypatch.setattr(rules, "token_accepts", lambda u, px, qx: calls.append(real(u, px, qx)) or calls[-1])
    draft, target = models
    res = speculative_generate(draft, target, target.encode("Assignment "), 101, 4, 1.0, rng=3)
    assert len(calls) > 20 and sum(res.accepted) == sum(calls)
    assert res.alpha == sum(calls) / len(calls)


def test_tree_statistics_add_up(models):
    """A full tree of width 2 and depth g has 2 + 4 + ... + 2^g nodes; the target scores them and the root
    (2^(g+1) - 1 positions) in one call; the draft scores 1 + 2 + ... + 2^(g-1) = 2^g - 1 contexts. (The n-gram
    behind the shipped draft: a row cut to k ids may have fewer than 2 ids left, and a narrower tree.)"""
    draft, target = models[0].ngram, models[1]
    res = speculative_generate(draft, target, target.encode("Assignment "), 60, 3, 1.0, rng=4, verify="tree")
    assert len(res.tokens) == 60 == sum(res.accepted) + res.target_calls
    assert res.scored == [2 ** (d + 1) - 1 for d in res.drafted]
    assert res.draft_calls == sum(2 ** d - 1 for d in res.drafted)
    assert all(0 <= a <= d <= 3 for a, d in zip(res.accepted, res.drafted)) and 0 < res.alpha < 1


def test_zero_new_tokens(models):
    draft, target = models
    res = speculative_generate(draft, target, [1, 2], 0, 4)
    assert res.tokens == [] and res.target_calls == 0 and autoregressive_generate(target, [1, 2], 0) == []


def test_the_same_seed_gives_the_same_sample(models):
    draft, target = models
    prompt = target.encode("The ")
    a = speculative_generate(draft, target, prompt, 30, 3, 0.8, rng=np.random.default_rng(5))
    b = speculative_generate(draft, target, prompt, 30, 3, 0.8, rng=5)
    assert a.tokens == b.tokens and a.accepted == b.accepted


@pytest.mark.slow
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_cold_and_warm_draft_caches_give_the_same_tokens(models, temperature):
    # a freshly loaded draft builds every row it visits; the module's draft has most cached already
    draft, target = models
    prompt = target.encode("Assignment ")
    speculative_generate(draft, target, prompt, 80, 4, temperature, rng=11)     # warm the shared draft
    cold_draft, _ = load_pretrained()
    cold = speculative_generate(cold_draft, target, prompt, 80, 4, temperature, rng=11)
    warm = speculative_generate(draft, target, prompt, 80, 4, temperature, rng=11)
    assert cold.tokens == warm.tokens and cold.accepted == warm.accepted


@pytest.mark.parametrize("bad, match", [
    (dict(prompt_ids=[1, 96]), r"prompt_ids\[1\] is 96"),      # id outside the vocabulary
    (dict(prompt_ids=[-1]), r"prompt_ids\[0\] is -1"),          # negative id
    (dict(gamma=-1), "gamma is -1"),
    (dict(max_new_tokens=-2), "max_new_tokens is -2"),
    (dict(temperature=-0.5), "temperature must be a number >= 0"),
    (dict(verify="blok"), "verify is 'blok'; choose one of 'token', 'block', 'tree', 'typical', 'greedy'"),
    (dict(verify="greedy", temperature=0.5), "verify='greedy' decodes at temperature 0"),
    (dict(width=3), "width is an option of verify='tree', not of verify='token'"),
    (dict(verify="block", eps=0.1), "eps is an option of verify='typical'"),
    (dict(verify="tree", width=0), "width must be an int >= 1, got 0"),
])
def test_bad_input_is_named(models, bad, match):
    draft, target = models
    kwargs = dict(prompt_ids=[1, 2], max_new_tokens=5, gamma=2, temperature=0.0) | bad
    with pytest.raises(ValueError, match=match):
        speculative_generate(draft, target, **kwargs)


class ProbsOnly:
    """A model that only returns rows: not a Draft until wrapped in RowDraft."""

    def __init__(self, model):
        self.V, self.next_token_probs = model.V, model.next_token_probs


def test_the_model_interface(models):
    draft, target = models
    assert isinstance(draft, Draft) and isinstance(target, Target) and isinstance(RowDraft(target), Draft)
    assert not isinstance(ProbsOnly(draft), Draft) and not isinstance(draft, Target)
    with pytest.raises(TypeError, match="draft lacks propose, argmax_next of the Draft interface .* in RowDraft"):
        speculative_generate(ProbsOnly(draft), target, [1, 2], 5, 2)
    with pytest.raises(TypeError, match="target lacks probs_for_positions, probs_for_tree of the Target interface"):
        speculative_generate(draft, draft, [1, 2], 5, 2)


@pytest.mark.parametrize("temperature", [0.0, 0.9])
@pytest.mark.parametrize("verify", ["token", "tree"])
def test_row_draft_equals_the_ngram_fast_path(models, temperature, verify):
    # same rows, same argmax / same single uniform per draw: the same tokens (the n-gram behind the shipped
    # draft: the TopKDraft draws from its own buffer of uniforms, so its equality with RowDraft is in law only)
    draft, target = models[0].ngram, models[1]
    prompt = target.encode("If the ")
    fast = speculative_generate(draft, target, prompt, 60, 3, temperature, rng=8, verify=verify)
    generic = speculative_generate(RowDraft(draft), target, prompt, 60, 3, temperature, rng=8, verify=verify)
    assert fast.tokens == generic.tokens and fast.accepted == generic.accepted


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("verify", ["token", "block"])
def test_a_draft_equal_to_the_target_is_always_accepted(models, temperature, verify):
    """q = p: greedy drafts are argmax p, and sampled ones pass u < min(1, p/q) = 1 for every u in [0, 1)
    (block: every w_i = 1 = h_i). So every call emits gamma + 1 tokens: 50 tokens at gamma 4 take 10 calls."""
    _, target = models
    res = speculative_generate(RowDraft(target), target, target.encode("The "), 50, 4, temperature, rng=1,
                               verify=verify)
    assert res.alpha == 1.0 and res.target_calls == 10 and res.accepted == res.drafted
    if temperature == 0:
        assert res.tokens == autoregressive_generate(target, target.encode("The "), 50)


def test_typical_options_reach_the_rule(models):
    """eps = 0 makes the bar min(0, ...) = 0: every draft with p(x) > 0 passes, and a softmax row has no
    zeros, so every call keeps all gamma drafts (alpha = 1); the default bar rejects some."""
    draft, target = models
    prompt = target.encode("The ")
    res = speculative_generate(draft, target, prompt, 50, 4, 1.0, rng=2, verify="typical", eps=0.0)
    assert res.alpha == 1.0 and res.accepted == res.drafted
    assert speculative_generate(draft, target, prompt, 50, 4, 1.0, rng=2, verify="typical").alpha < 1.0


# ---------------------------------------------------------------- the target scores a tree in one call
def test_probs_for_tree_equals_rows_for_explicit_contexts(models):
    """Each node's row equals next_token_probs on the explicit context ids + path (an independent window
    builder), and a chain's rows equal probs_for_positions (bit for bit: the same windows, one batch)."""
    _, target = models
    ids = target.encode("The tree ")
    tokens, parents = [5, 9, 40, 41, 7, 8], [-1, -1, 0, 0, 2, 4]
    paths = [[]]
    for parent, tok in zip(parents, tokens):
        paths.append(paths[parent + 1] + [tok])
    rows = target.probs_for_tree(ids, parents, tokens, 0.8)
    assert rows.shape == (7, 96)
    assert np.allclose(rows, target.next_token_probs([ids + path for path in paths], 0.8), atol=1e-12, rtol=0)
    chain = ids[-5:]
    assert (target.probs_for_tree(ids[:-5], [-1, 0, 1, 2, 3], chain)
            == target.probs_for_positions(ids, len(ids) - 5)).all()
    with pytest.raises(ValueError, match=r"node 1: parent 1 must be in \[-1, 1\)"):
        target.probs_for_tree(ids, [-1, 1], [5, 6])


# ---------------------------------------------------------------- lossless: the output distribution is the target's
N_RUNS = 4000
# For N = 4000 runs the expected total-variation distance between an empirical distribution and
# the true p is about 0.5 * sqrt(2 / (pi N)) * sum_x sqrt(p(x)(1 - p(x))): 0.026-0.034 for the four
# distributions below. TV_TOL = 0.07 is about twice the largest; a draft-only sampler could not pass it:
# TV(q, p) > 0.2 for these prompts (asserted below; 0.43 and 0.40 for the distilled draft), so its
# empirical TV would be > 0.2 - 0.034 > TV_TOL.
TV_TOL = 0.07


def tv(counts, probs):
    return 0.5 * np.abs(counts / counts.sum() - probs).sum()


@pytest.mark.slow  # ~1 s each on an idle machine, up to 4 s on a busy one
@pytest.mark.parametrize("temperature, prompt_text, verify", [
    (1.0, "The ", "token"), (0.7, "If the ", "token"), (1.0, "The ", "block"), (1.0, "The ", "tree"),
    # power: typical acceptance is NOT lossless and must fail (TV ~0.4 here)
    (1.0, "The ", "typical"),
])
def test_sampled_tokens_follow_the_target(models, temperature, prompt_text, verify):
    draft, target = models
    prompt = target.encode(prompt_text)
    rng = np.random.default_rng(2024)
    first, second = np.zeros(96), np.zeros(96)
    for _ in range(N_RUNS):
        toks = speculative_generate(draft, target, prompt, 3, gamma=2, temperature=temperature, rng=rng,
                                    verify=verify).tokens
        first[toks[0]] += 1
        second[toks[1]] += 1
    p1 = target.probs_for_positions(prompt, len(prompt), temperature)[0]
    # exact marginal of the 2nd token: sum_x p(x | prompt) p(. | prompt + x), one call over all 96 contexts
    p2 = p1 @ target.next_token_probs([prompt + [x] for x in range(96)], temperature)
    q1 = draft.next_token_probs([prompt], temperature)[0]
    assert 0.5 * np.abs(q1 - p1).sum() > 0.2                # the draft alone would fail: the test has power
    lossless = verify != "typical"
    assert (tv(first, p1) < TV_TOL) == lossless
    assert (tv(second, p2) < TV_TOL) == lossless


@pytest.mark.parametrize("kwargs, error, match", [
    ({"verify": "typical", "eps": "x"}, TypeError, "eps must be a number >= 0, got str"),
    ({"verify": "typical", "eps": -0.1}, ValueError, "eps must be a number >= 0"),    # would accept every draft
    ({"verify": "typical", "delta": float("nan")}, ValueError, "delta must be a number >= 0"),
    ({"verify": "tree", "width": 2.0}, TypeError, "width must be an int >= 1, got float"),
    ({"temperature": "1"}, TypeError, "temperature must be a number >= 0, got str"),
    ({"temperature": 1.0, "rng": "seed"}, TypeError, "rng must be a numpy Generator, an int seed >= 0 or None"),
    ({"temperature": 1.0, "rng": -3}, ValueError, "rng must be a numpy Generator, an int seed >= 0 or None"),
    ({"temperature": 1.0, "rng": True}, TypeError, "rng is True"),
    ({"prompt_ids": "The "}, TypeError, "prompt_ids must be a sequence"),
    ({"prompt_ids": None}, TypeError, "prompt_ids must be a sequence"),
    ({"prompt_ids": [1, 2.0]}, TypeError, r"prompt_ids\[1\] is 2.0, not a token id"),
])
def test_speculative_generate_names_the_bad_argument(models, kwargs, error, match):
    from specdec.generation.decode import speculative_generate
    draft, target = models
    with pytest.raises(error, match=match):
        speculative_generate(draft, target, **({"prompt_ids": [1, 2], "max_new_tokens": 3, "gamma": 2} | kwargs))


def test_the_cli_offers_exactly_the_generators_rules():
    """`python -m specdec` names the rules without importing NumPy, so it keeps its own list: the same list."""
    import specdec.__main__ as cli
    from specdec.generation import decode

    assert set(cli.RULES) == set(decode.RULES) and set(cli.TREE_RULES) == set(decode.TREE_RULES)
