"""block.block_verify (Sun et al. 2024) against hand-worked cases, exact enumeration and fixed-seed statistics.

References: the paper's two-token example worked by hand in exact fractions (below); the
exact step distribution of `exact.step_outcomes` (itself checked against the target in
test_exact_rules.py); the token rule (`speculative_sample`) at K = 1, draw for draw; and
fixed-seed frequencies with a stated tolerance that two known-wrong block rules fail.
Notation: target p, draft q, K = gamma drafted tokens.
"""

import itertools
import random
from fractions import Fraction as F

import pytest

from helpers import Scripted, inverse_cdf_point, worst_z
from references import block_thresholds, normalized_excess, pairs
from specdec import speculative_sample
from specdec.block import block_verify
from specdec.rules import PlainRows, block_rule
from specdec.exact import expected_accepted, step_outcomes, toy_model

# The paper's example (context-free rows, K = 2): the target prefers b = 1, the draft a = 0.
P_EX, Q_EX = (F(1, 3), F(2, 3)), (F(2, 3), F(1, 3))


def test_the_papers_example_by_hand():
    """p = [1/3, 2/3], q = [2/3, 1/3], K = 2. Per draft (probability under q):

    "aa" (4/9): w_1 = 1/2, w_2 = 1/4. Z_1 = max(0, 1/6 - 2/3) + max(0, 1/3 - 1/3) = 0, so h_1 = 0; h_2 = 1/4.
                n = 2 w.p. 1/4, then y ~ p: (a,a,a) 1/27, (a,a,b) 2/27; n = 0 w.p. 3/4, y from
                normalize(max(0, p - q)) = [0, 1]: (b,) 4/9 * 3/4 = 1/3.
    "ab" (2/9): w_1 = 1/2, w_2 = min(1, 1/2 * 2) = 1 = h_2: n = 2 surely: (a,b,a) 2/27, (a,b,b) 4/27.
    "ba" (2/9): w_1 = 1, Z_1 = max(0, 2/3 - 1/3) = 1/3, h_1 = (1/3) / (1/3 + 0) = 1; w_2 = 1/2 = h_2.
                n = 2 w.p. 1/2: (b,a,a) 1/27, (b,a,b) 2/27; n = 1 w.p. 1 * (1 - 1/2), y from [0, 1]: (b,b) 1/9.
    "bb" (1/9): w_1 = w_2 = 1: n = 2: (b,b,a) 1/27, (b,b,b) 2/27.
    P(n = 0, 1, 2) = 1/3, 1/9, 5/9: E[n] = 1/9 + 10/9 = 11/9. The token rule: beta = 2/3,
    P(n) = 1/3, 2/9, 4/9, E[n] = 10/9.
    """
    want = {(2, (0, 0, 0)): F(1, 27), (2, (0, 0, 1)): F(2, 27), (0, (1,)): F(1, 3),
            (2, (0, 1, 0)): F(2, 27), (2, (0, 1, 1)): F(4, 27),
            (2, (1, 0, 0)): F(1, 27), (2, (1, 0, 1)): F(2, 27), (1, (1, 1)): F(1, 9),
            (2, (1, 1, 0)): F(1, 27), (2, (1, 1, 1)): F(2, 27)}
    p, q = (lambda s: P_EX), (lambda s: Q_EX)
    assert step_outcomes(p, q, 2, "block") == want
    assert expected_accepted(p, q, 2, "block") == F(11, 9)
    assert expected_accepted(p, q, 2, "token") == F(10, 9)
    # the first emitted token is distributed as p: (a, ...) = 1/27 + 2/27 + 2/27 + 4/27 = 1/3
    assert sum(v for (_, b), v in want.items() if b[0] == 0) == F(1, 3)


def test_a_pair_as_likely_under_p_as_under_q_is_always_kept():
    # "ab" of the example: w_2 = 1 = h_2, so n = 2 for every seed (the token rule keeps it half the time)
    q_rows, p_rows = [[2 / 3, 1 / 3]] * 2, [[1 / 3, 2 / 3], [1 / 3, 2 / 3], [0.0, 1.0]]
    assert all(block_verify([0, 1], q_rows, p_rows, rng=s)["acceptance_count"] == 2 for s in range(50))
    assert 10 < sum(speculative_sample([0, 1], q_rows, p_rows, rng=s)["acceptance_count"] == 2
                    for s in range(50)) < 40


# ---- edges -----------------------------------------------------------------------------------------
def test_k_zero():
    assert block_verify([], [], []) == {"accepted_tokens": [], "bonus_token": None, "acceptance_count": 0}
    assert block_verify([], [], [[0.0, 1.0]], rng=3)["bonus_token"] == 1


def test_no_bonus_row_and_rows_past_k_plus_one():
    # p == q: every w_i = 1, so all are kept; without row K there is no bonus; extra rows are unused
    q = [[0.5, 0.5], [0.25, 0.75]]
    assert block_verify([0, 1], q, q, rng=1) == {"accepted_tokens": [0, 1], "bonus_token": None, "acceptance_count": 2}
    out = block_verify([0, 1], q, q + [[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]], rng=1)
    assert out == {"accepted_tokens": [0, 1], "bonus_token": 1, "acceptance_count": 2}


def test_zero_target_probability_stops_the_block_there():
    # p_1(x_2) = 0: w_2 = w_3 = 0, so h_2 = h_3 = 0; p_0 = q_0 makes w_1 = 1 = h_1: n = 1 surely,
    # and y comes from normalize(max(0, p_1 - q_1)) = [0, 0, 1]
    q = [[0.2, 0.3, 0.5], [0.5, 0.5, 0.0], [1 / 3] * 3]
    p = [[0.2, 0.3, 0.5], [0.0, 0.5, 0.5], [1 / 3] * 3, [1 / 3] * 3]
    for seed in range(20):
        assert block_verify([2, 0, 1], q, p, rng=seed) == {"accepted_tokens": [2], "bonus_token": 2,
                                                           "acceptance_count": 1}


def test_zero_over_zero_threshold_keeps_the_prefix():
    """p_0 = q_0 gives w_1 = 1 and p_1 = q_1 gives Z_1 = 0: h_1 = 0/0, taken as 1. Then n >= 1
    always, and the empty residual at position 1 is never asked for a token.
    x_2 = 0 has p_1(0)/q_1(0) = 1 too, so w_2 = 1 = h_2: n = 2 surely, y ~ p_2 = [0, 1]."""
    q = [[0.5, 0.5], [0.5, 0.5]]
    for seed in range(20):
        assert block_verify([1, 0], q, q + [[0.0, 1.0]], rng=seed)["acceptance_count"] == 2


@pytest.mark.parametrize("args, error, match", [
    (([0], [[0.0, 1.0]], [[0.5, 0.5]]), ValueError, r"draft_probs\[0\]\[0\] is 0"),        # q(x) = 0
    (([0, 1], [[0.5, 0.5]], [[0.5, 0.5]] * 3), ValueError, r"len\(draft_probs\) is 1"),   # lengths
    (([0], [[0.5, 0.5]], []), ValueError, r"len\(target_probs\) is 0"),                   # target too short
    (([2], [[0.5, 0.5]], [[0.5, 0.5]]), ValueError, r"draft_tokens\[0\] is 2"),           # outside [0, V)
    (([0], [[2.0, -1.0]], [[0.5, 0.5]]), ValueError, r"draft_probs\[0\]\[1\] is -1.0"),   # not a distribution
    (([True], [[0.5, 0.5]], [[0.5, 0.5]]), TypeError, r"not a bool"),                     # bool id
])
def test_same_validation_as_speculative_sample(args, error, match):
    for function in (block_verify, speculative_sample):
        with pytest.raises(error, match=match):
            function(*args, rng=0)


def test_rng_forms_and_repeatability():
    q, p = [[0.3, 0.7]] * 3, [[0.6, 0.4]] * 4
    assert block_verify([1, 1, 0], q, p, rng=7) == block_verify([1, 1, 0], q, p, rng=random.Random(7))
    assert len({str(block_verify([1, 1, 0], q, p, rng=s)) for s in range(40)}) > 1
    with pytest.raises(TypeError, match="rng must be"):
        block_verify([1], q[:1], p, rng="seed")


def test_inputs_are_not_mutated_and_ids_are_plain_ints():
    np = pytest.importorskip("numpy")
    q, p = np.array([[0.3, 0.7]] * 2), np.array([[0.6, 0.4]] * 3)
    q0, p0 = q.copy(), p.copy()
    out = block_verify(np.array([1, 0]), q, p, rng=1)
    assert (q == q0).all() and (p == p0).all()
    assert all(type(t) is int for t in out["accepted_tokens"] + [out["bonus_token"]])


# ---- K = 1 is the token rule, draw for draw ----------------------------------------------------------------
def test_one_token_block_is_the_token_rule_with_the_same_uniforms():
    gen = random.Random(0)
    for case in range(300):
        v = gen.randint(2, 5)
        q, p = ([[gen.random() for _ in range(v)] for _ in range(r)] for r in (1, 2))
        q, p = ([[x / sum(row) for x in row] for row in rows] for rows in (q, p))
        x = [gen.choices(range(v), q[0])[0]]
        assert block_verify(x, q, p, rng=case) == speculative_sample(x, q, p, rng=case), case


# ---- fixed-seed statistics against the exact distribution --------------------------------------------------
SEED_P, SEED_Q, V, K = 18, 518, 3, 2          # a prefix-dependent toy pair where both wrong rules are far off
N = 6000
# Each outcome's count must lie within Z_TOL standard errors sqrt(N pi (1 - pi)) of N pi, and an outcome of
# probability 0 must never occur. With at most 30 outcomes a correct sampler fails with probability
# below 30 * 7e-6 = 2e-4 (two-sided normal tail at 4.5); the seeds make the test repeatable.
Z_TOL = 4.5


def floats(row):
    return [float(v) for v in row]


def per_token_block(tokens, q, p, rng):
    """vllm-ascend#7807: the last pass of eta_i < min(1, p/q), each token tested alone, per-token residual."""
    eta = [rng.random() for _ in tokens]
    n = max([i + 1 for i, x in enumerate(tokens) if eta[i] < min(1.0, p[i][x] / q[i][x])], default=0)
    row = p[n] if n == len(tokens) else PlainRows.residual(p[n], q[n])
    return n, PlainRows.sample(row, rng)


def ones_fallback(tokens, q, p, rng):
    """A draft row of ones (`draft_probs = 1` for every id, as for drafters without probabilities)."""
    return block_rule(tokens, [[1.0] * len(p[0])] * len(tokens), p, rng)


def correct(tokens, q, p, rng):
    out = block_verify(tokens, q, p, rng)
    return out["acceptance_count"], out["bonus_token"]


def sample_outcomes(rule, n_runs, seed):
    """{(n kept, emitted block): count} and {first two generated tokens: count} over n_runs steps."""
    p_model, q_model, gen = toy_model(V, SEED_P), toy_model(V, SEED_Q), random.Random(seed)
    blocks, pairs = {}, {}
    for _ in range(n_runs):
        x = ()
        for _ in range(K):
            x += (gen.choices(range(V), floats(q_model(x)))[0],)
        q_rows, p_rows = [floats(q_model(x[:i])) for i in range(K)], [floats(p_model(x[:i])) for i in range(K + 1)]
        n, y = rule(list(x), q_rows, p_rows, gen)
        block = x[:n] + (y,)
        blocks[n, block] = blocks.get((n, block), 0) + 1
        if len(block) < 2:                                                     # the target goes on
            block += (gen.choices(range(V), floats(p_model(block)))[0],)
        pairs[block[:2]] = pairs.get(block[:2], 0) + 1
    return blocks, pairs


@pytest.fixture(scope="module")
def exact():
    p, q = toy_model(V, SEED_P), toy_model(V, SEED_Q)
    from specdec.exact import target_distribution
    return step_outcomes(p, q, K, "block"), target_distribution(p, 2)


@pytest.mark.slow
@pytest.mark.parametrize("rule, should_pass", [(correct, True), (per_token_block, False), (ones_fallback, False)],
                         ids=["block_verify", "per-token test (vllm-ascend#7807)", "draft rows of ones"])
def test_frequencies_match_the_exact_distribution(exact, rule, should_pass):
    blocks, pairs = sample_outcomes(rule, N, seed=2024)
    steps, target = exact
    z_blocks, z_pairs = worst_z(blocks, steps, N), worst_z(pairs, target, N)
    if should_pass:
        assert z_blocks <= Z_TOL and z_pairs <= Z_TOL, (z_blocks, z_pairs)
    else:  # power: the same test catches a known-wrong rule, in the emitted text itself
        assert z_pairs > Z_TOL, z_pairs


# ---- decision by decision, with scripted uniforms (tests/references.py) ----------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_block_verify_keeps_the_largest_i_with_eta_below_h_and_draws_from_the_weighted_residual(seed):
    gen, checked = random.Random(seed), 0
    for _, gamma, P, Q in pairs(30, seed=300 * seed):
        x = tuple(gen.choice([t for t, v in enumerate(Q(())) if v]) for _ in range(1))
        for _ in range(gamma - 1):          # a draft with mass under q, position by position
            x += (gen.choice([t for t, v in enumerate(Q(x)) if v]),)
        q_rows, p_rows = [Q(x[:i]) for i in range(gamma)], [P(x[:i]) for i in range(gamma + 1)]
        w, h = block_thresholds(p_rows, q_rows, x)
        # each eta in [0, 1)
        for eta in itertools.product(*[sorted({0.0, float(v) / 2, (float(v) + 1) / 2} - {1.0}) for v in h]):
            n = max([i for i in range(1, gamma + 1) if eta[i - 1] < h[i - 1]], default=0)
            row = p_rows[gamma] if n == gamma else normalized_excess(p_rows[n], q_rows[n], w[n])
            for y in (t for t, v in enumerate(row) if v):
                u = inverse_cdf_point(row, y)
                out = block_verify(list(x), [[float(v) for v in r] for r in q_rows],
                                   [[float(v) for v in r] for r in p_rows], rng=Scripted(list(eta) + [u]))
                assert out == {"accepted_tokens": list(x[:n]), "bonus_token": y, "acceptance_count": n}, (x, eta)
                checked += 1
    assert checked > 100
