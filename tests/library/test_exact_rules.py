"""Exact enumeration of multi-token rules (specdec.exact, re-exported by specdec.theory): the proofs' checks.

The independent reference is the target itself: `target_distribution(p, n)` is the product
p(s_1) p(s_2 | s_1) ..., computed in exact fractions. A lossless rule's generated text must
equal it exactly (TV == 0, no tolerance) on random toy pairs whose rows depend on the prefix.
Hand-worked cases carry their arithmetic; known-wrong rules must show TV > 0 (the checks' power).
"""

from fractions import Fraction as F

import pytest

from references import (pairs, reference_block_step, reference_generation, reference_multi_draft,
                        reference_target, reference_token_expected)
from specdec.exact import (emitted_distribution, expected_accepted, multi_draft_distribution, step_outcomes,
                           target_distribution, total_variation, toy_model)


def toy_pairs(count, max_gamma=3):
    """`count` pairs (V, gamma, p, q): V in {2, 3}, gamma in 1..max_gamma, integer weights 0..4 per row
    (zeros, ties and disjoint supports occur), different rows after every prefix."""
    for i in range(count):
        yield 2 + i % 2, 1 + (i // 2) % max_gamma, toy_model(2 + i % 2, 2 * i), toy_model(2 + i % 2, 2 * i + 1)


def test_toy_models_depend_on_the_prefix_and_are_distributions():
    p = toy_model(3, seed=0)
    rows = {s: p(s) for s in [(), (0,), (1,), (2,), (0, 1), (1, 0)]}
    assert len(set(rows.values())) > 3
    assert all(sum(r) == 1 and all(v >= 0 for v in r) for r in rows.values())
    assert toy_model(3, seed=0)((0, 1)) == rows[0, 1]          # the same row on every call and run


# ---- lossless: exactly the target, over 100 random prefix-dependent pairs ---------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("rule", ["token", "block"])
def test_lossless_rules_give_exactly_the_target(rule):
    worse = []
    for v, gamma, p, q in toy_pairs(100):
        # the first gamma + 1 tokens: one whole step, and steps after shorter ones
        assert emitted_distribution(p, q, gamma + 1, gamma, rule) == target_distribution(p, gamma + 1), (v, gamma)
        if rule == "block":
            e_block, e_token = expected_accepted(p, q, gamma, "block"), expected_accepted(p, q, gamma, "token")
            assert e_block >= e_token                                           # Sun et al.'s Theorem 2
            worse.append(e_block > e_token)
    assert rule == "token" or sum(worse) >= 30   # and the gain is real on many pairs, not a tie everywhere


@pytest.mark.parametrize("replace", [False, True], ids=["without replacement", "iid"])
def test_multi_draft_is_exactly_p_on_100_pairs(replace):
    for i, (v, _, p, q) in enumerate(toy_pairs(100)):
        k = 1 + i % 3
        assert multi_draft_distribution(p(()), q(()), k, replace) == list(p(())), (i, k)


@pytest.mark.slow
@pytest.mark.parametrize("replace", [False, True], ids=["without replacement", "iid"])
def test_trees_are_exactly_the_target(replace):
    for v, gamma, p, q in toy_pairs(40, max_gamma=2):
        assert emitted_distribution(p, q, gamma + 1, gamma, "tree", width=2, replace=replace) == \
            target_distribution(p, gamma + 1)


def test_a_tree_of_width_one_is_the_token_rule():
    for v, gamma, p, q in toy_pairs(30):
        assert step_outcomes(p, q, gamma, "tree", width=1) == step_outcomes(p, q, gamma, "token")


# ---- where block verification equals the token rule ----------------------------------------------------------
def test_block_equals_token_at_gamma_one():
    for v, _, p, q in toy_pairs(60):
        assert step_outcomes(p, q, 1, "block") == step_outcomes(p, q, 1, "token")


def one_hot(model, vocab):
    """Temperature 0: the model's argmax (ties: the lower id) with probability 1."""
    def row(s):
        r = model(s)
        best = max(range(vocab), key=lambda j: (r[j], -j))
        return tuple(F(int(j == best)) for j in range(vocab))
    return row


def test_at_temperature_zero_block_token_and_greedy_agree():
    for v, gamma, p, q in toy_pairs(60):
        p0, q0 = one_hot(p, v), one_hot(q, v)
        greedy = step_outcomes(p0, q0, gamma, "greedy")
        assert step_outcomes(p0, q0, gamma, "block") == greedy == step_outcomes(p0, q0, gamma, "token")
        assert step_outcomes(p0, q0, gamma, "typical") == greedy      # the bar is min(0.09, 0.3) on one-hot rows


# ---- the rules that are NOT lossless, measured exactly ---------------------------------------------------------
@pytest.mark.parametrize("rule, options", [
    ("token-no-stop", {}), ("block-per-token", {}), ("block", {"reported": "ones"}),
    ("token", {"reported": "ones"}), ("tree", {"width": 2, "naive": True}), ("greedy", {}), ("typical", {}),
], ids=["token-no-stop", "block-per-token", "block-ones", "token-ones", "tree-naive", "greedy", "typical"])
def test_known_wrong_rules_are_caught(rule, options):
    damaged = 0
    for v, gamma, p, q in toy_pairs(30, max_gamma=2):
        tv = total_variation(emitted_distribution(p, q, gamma + 1, gamma, rule, **options),
                             target_distribution(p, gamma + 1))
        damaged += tv > 0
    assert damaged >= 10


@pytest.mark.parametrize("rule", ["token", "block"])
def test_a_draft_treated_as_deterministic_is_lossless(rule):
    """A drafter with no probabilities reported as one-hot on its token (q = 1 for the drafted id,
    0 elsewhere) is verified losslessly: each fixed draft is a valid deterministic draft, and the
    random draft is a mixture of them. Contrast the row of ones above."""
    for v, gamma, p, q in toy_pairs(30, max_gamma=2):
        assert emitted_distribution(p, q, gamma + 1, gamma, rule, reported="one-hot") == \
            target_distribution(p, gamma + 1)


def test_typical_acceptance_tv_by_hand():
    """p = [1/20, 19/20] everywhere, q = [1/2, 1/2], gamma = 1. H(p) = 0.199 nats, so the bar is
    min(0.09, 0.3 e^-0.199 = 0.246) = 0.09. A drafted 0 (p = 1/20) fails: the greedy correction
    emits 1. A drafted 1 passes and the greedy bonus is 1. So the text is always 1, 1, ...:
    TV of the first token = p(0) = 1/20; of the first two, 1 - (19/20)^2 = 39/400."""
    p, q = (lambda s: (F(1, 20), F(19, 20))), (lambda s: (F(1, 2), F(1, 2)))
    assert emitted_distribution(p, q, 2, 1, "typical") == {(1, 1): 1}
    assert total_variation(emitted_distribution(p, q, 1, 1, "typical"), target_distribution(p, 1)) == F(1, 20)
    assert total_variation(emitted_distribution(p, q, 2, 1, "typical"), target_distribution(p, 2)) == F(39, 400)
    # a lower bar keeps the 0: eps = 0.04 < 1/20 makes every draft pass, and the first token is then ~ q
    assert total_variation(emitted_distribution(p, q, 1, 1, "typical", eps=0.04),
                           target_distribution(p, 1)) == F(1, 2) - F(1, 20)


def test_token_rule_that_does_not_stop_by_hand():
    """p = [1/2, 1/2] after the empty prefix and after 0, [0, 1] after 1; q = [0, 1] always; gamma = 2.
    The draft is always 1, 1. Position 1: p(1) = 1/2 -> kept w.p. 1/2, else the residual [1, 0] gives 0.
    Position 2 is verified against p(. | 1) = [0, 1] whatever happened: 1 is kept surely.
    So the first two tokens are (1, 1) or (0, 1), 1/2 each; the target gives (0, 1) only 1/4
    (p(0) p(1 | 0) = 1/2 * 1/2) and (0, 0) another 1/4: TV = 1/4."""
    p = lambda s: (F(0), F(1)) if s[-1:] == (1,) else (F(1, 2), F(1, 2))
    q = lambda s: (F(0), F(1))
    got = emitted_distribution(p, q, 2, 2, "token-no-stop")
    assert got == {(1, 1): F(1, 2), (0, 1): F(1, 2)}
    assert total_variation(got, target_distribution(p, 2)) == F(1, 4)
    assert emitted_distribution(p, q, 2, 2, "token") == target_distribution(p, 2)


def test_joint_of_the_first_three_tokens_as_a_lesson_uses_it():
    # a lesson's check: the first two and three generated tokens on a model whose rows depend on the prefix
    p, q = toy_model(3, seed=41), toy_model(3, seed=42)
    for n in (2, 3):
        got = emitted_distribution(p, q, n, 3, "token")
        assert got == target_distribution(p, n) and sum(got.values()) == 1


# ---- validation ----------------------------------------------------------------------------------------------
def test_bad_input_is_named():
    p = toy_model(2, 0)
    with pytest.raises(ValueError, match="rule is 'blok'; choose one of token, block"):
        step_outcomes(p, p, 2, "blok")
    with pytest.raises(ValueError, match="gamma must be an int >= 0, got -1"):
        emitted_distribution(p, p, 2, -1)
    with pytest.raises(ValueError, match=r"q\(\(\)\) has 3 entries, another row has 2"):
        step_outcomes(p, toy_model(3, 0), 1)
    with pytest.raises(ValueError, match=r"p\(\(\)\) is not a distribution \(sums to 3/2\)"):
        target_distribution(lambda s: (F(1), F(1, 2)), 1)
    with pytest.raises(ValueError, match="reported is 'zeros'"):
        step_outcomes(p, p, 1, "token", reported="zeros")


# ---- an independent enumeration from the papers' formulas (tests/references.py) --------------------------------------
@pytest.mark.slow
def test_block_verification_exactly_by_an_independent_enumeration():
    strictly_more = 0
    for v, gamma, P, Q in pairs(105, seed=7000):
        ref = reference_block_step(P, Q, gamma)
        assert {k: pr for k, pr in step_outcomes(P, Q, gamma, "block").items() if pr} == ref, (v, gamma)
        assert reference_generation(P, Q, gamma, gamma + 1) == reference_target(P, gamma + 1), (v, gamma)
        e_block = sum(n * pr for (n, _), pr in ref.items())
        e_token = reference_token_expected(P, Q, gamma)
        assert expected_accepted(P, Q, gamma, "block") == e_block and expected_accepted(P, Q, gamma) == e_token
        assert e_block >= e_token
        strictly_more += e_block > e_token
    assert strictly_more >= 20         # the inequality is strict on many pairs: the test can tell the rules apart


def test_the_papers_two_token_example_by_hand():
    """p = [1/3, 2/3], q = [2/3, 1/3] at every position, gamma 2. Token rule: E[n] = beta + beta^2 with
    beta = 1/3 + 1/3 = 2/3, so 10/9. Block: E[n] = E[p_1] + E[p_2]; p_1 = min(1, p/q) is 1/2 for a
    drafted 0 (prob 2/3) and 1 for a drafted 1: 2/3 * 1/2 + 1/3 = 2/3; p_2 over the four drafts
    (00: 1/4, 01: 1, 10: 1/2, 11: 1; probabilities 4/9, 2/9, 2/9, 1/9) is 1/9 + 2/9 + 1/9 + 1/9 = 5/9.
    So 2/3 + 5/9 = 11/9."""
    P, Q = (lambda s: (F(1, 3), F(2, 3))), (lambda s: (F(2, 3), F(1, 3)))
    assert reference_token_expected(P, Q, 2) == F(10, 9)
    assert sum(n * pr for (n, _), pr in reference_block_step(P, Q, 2).items()) == F(11, 9)
    assert (expected_accepted(P, Q, 2, "token"), expected_accepted(P, Q, 2, "block")) == (F(10, 9), F(11, 9))


@pytest.mark.slow
@pytest.mark.parametrize("replace", [False, True], ids=["without replacement", "iid"])
def test_multi_draft_exactly_the_target_by_an_independent_enumeration(replace):
    for i, (v, _, P, Q) in enumerate(pairs(105, seed=9000)):
        p, q, k = list(P(())), list(Q(())), 1 + i % 3
        ref = reference_multi_draft(p, q, k, replace)
        assert ref == p, (i, k)
        assert multi_draft_distribution(p, q, k, replace) == ref, (i, k)


# ---- bad input is named, never a hang or a silently wrong law --------------------------------------------------------
P2, Q2 = toy_model(2, 1), toy_model(2, 2)


HALF = [F(1, 2), F(1, 2)]


@pytest.mark.parametrize("call, error, match", [
    (lambda: step_outcomes(P2, Q2, 1.5), TypeError, "gamma must be an int >= 0, got float"),
    (lambda: expected_accepted(P2, Q2, True), TypeError, "gamma must be an int >= 0, got bool"),
    (lambda: step_outcomes(P2, Q2, -1), ValueError, "gamma must be an int >= 0, got -1"),
    (lambda: step_outcomes([0.5, 0.5], Q2, 1), TypeError, "p must be a function prefix -> row"),
    (lambda: step_outcomes(P2, Q2, 1, "tree", widht=2), TypeError, "widht is not an option of rule 'tree'"),
    (lambda: step_outcomes(P2, Q2, 1, "token", width=2), TypeError, "width is not an option of rule 'token'"),
    (lambda: step_outcomes(P2, Q2, 1, "tree", width=0), ValueError, "width must be an int >= 1"),   # not the token rule
    (lambda: step_outcomes(P2, Q2, 1, "tree", replace="no"), TypeError, "replace must be True or False"),
    (lambda: step_outcomes(P2, Q2, 1, "typical", eps="x"), TypeError, "eps must be a number >= 0"),
    (lambda: multi_draft_distribution(HALF, [F(1, 3)] * 3, 1), ValueError, "has 3 entries, another row has 2"),
    (lambda: multi_draft_distribution([F(1, 2)] * 3, [F(1, 3)] * 3, 1), ValueError,
     r"not a distribution \(sums to 3/2\)"),
    (lambda: multi_draft_distribution(HALF, HALF, 1.0), TypeError, "k must be an int >= 0, got float"),
    (lambda: toy_model(0, seed=1), ValueError, "vocab_size and max_weight must be >= 1"),   # was: an endless loop
    (lambda: toy_model(3, seed=1, max_weight=0), ValueError, "vocab_size and max_weight must be >= 1"),
])
def test_exact_enumeration_names_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
