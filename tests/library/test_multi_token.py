"""More than one drafted token: the gamma-token theorem of lesson 03 (sections 7-8), as tests.

The theorem: speculative sampling that drafts gamma tokens x_i ~ q(. | text, x_<i), keeps each while
u_i < min(1, p_i(x_i) / q_i(x_i)), emits a draw from norm(max(0, p_i - q_i)) at the first rejection and STOPS,
and after gamma kept drafts emits a bonus from p_gamma, generates text whose first n tokens are distributed
exactly as n tokens sampled from the target p (induction over the emitted tokens).

References, none of them the code under test:
- `chain_rule`: the target's own first n tokens, p(y_1) p(y_2 | y_1) ..., enumerated here in exact fractions;
- `spec_enumeration`: the algorithm above, enumerated here step after step in exact fractions, written from its
  definition (not from specdec.exact.steps);
- a hand-worked case (V = 2, gamma = 2) of the "no early stop" mistake, its arithmetic in the docstring;
- fixed-seed Monte Carlo of `speculative_sample` itself (drafts drawn with the standard library's
  `random.choices`), judged per token bin with helpers' `max_z` < `Z_MAX` (4.5 standard errors), with a power check:
  the same statistic must reject two known-wrong verifiers (no early stop; the bonus drawn from row gamma - 1).

All toy models have rows that depend on the prefix: on rows that ignore it, the no-early-stop mistake is exactly
lossless (tested below), so a check on fixed rows could never catch it.
"""

import random
from fractions import Fraction as F

import pytest
from helpers import Z_MAX, max_z
from hypothesis import given
from hypothesis import strategies as st

from specdec import speculative_sample
from specdec.exact import emitted_distribution, step_outcomes, total_variation, toy_model


# ---- independent exact references ------------------------------------------------------------------------------
def chain_rule(p, n, text=()):
    """{first n tokens: probability} of plain sampling from p."""
    if n == 0:
        return {(): F(1)}
    out = {}
    for y, py in enumerate(p(text)):
        if py:
            for rest, pr in chain_rule(p, n - 1, text + (y,)).items():
                out[(y,) + rest] = py * pr
    return out


def one_step(p, q, gamma, text):
    """{emitted block: probability} of one step from `text`, enumerated from the algorithm's definition."""
    out = {}

    def add(block, pr):
        out[block] = out.get(block, 0) + pr

    def verify(kept, pr):                                        # drafts x_0..x_{i-1} all kept, with probability pr
        prow = p(text + kept)
        if len(kept) == gamma:
            for y, py in enumerate(prow):                        # the bonus from row gamma
                add(kept + (y,), pr * py)
            return
        qrow = q(text + kept)
        excess = [max(0, a - b) for a, b in zip(prow, qrow)]
        for x, qx in enumerate(qrow):
            if qx:
                keep = min(1, prow[x] / qx)
                verify(kept + (x,), pr * qx * keep)
                for y, e in enumerate(excess):                   # first rejection: a correction, then stop
                    if e:
                        add(kept + (y,), pr * qx * (1 - keep) * e / sum(excess))
    verify((), F(1))
    return out


def spec_enumeration(p, q, n, gamma):
    """{first n emitted tokens: probability}: steps after steps, each from the text emitted so far."""
    out = {}

    def run(text, pr):
        if len(text) >= n:
            out[text[:n]] = out.get(text[:n], 0) + pr
            return
        for block, pb in one_step(p, q, gamma, text).items():
            if pb:
                run(text + block, pr * pb)
    run((), F(1))
    return out


def toy_pairs(count):
    """`count` (V, gamma, p, q): V in {2, 3}, gamma in 1..3, rows that depend on the whole prefix (weights 0..4).
    Seeds from 1000 on: other models than test_exact_rules.py's."""
    for i in range(count):
        v = 2 + i % 2
        yield v, 1 + (i // 2) % 3, toy_model(v, 1000 + 2 * i), toy_model(v, 1001 + 2 * i)


# ---- the theorem, exactly -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_first_two_and_three_tokens_are_exactly_the_targets_on_40_models():
    for v, gamma, p, q in toy_pairs(40):
        for n in (2, 3):
            want = chain_rule(p, n)
            assert spec_enumeration(p, q, n, gamma) == want, (v, gamma, n)          # the algorithm, by definition
            assert emitted_distribution(p, q, n, gamma, "token") == want, (v, gamma, n)   # the library's enumeration
            assert total_variation(emitted_distribution(p, q, n, gamma, "token"), want) == 0


def test_the_bonus_given_all_kept_follows_the_row_after_the_kept_drafts():
    # One step: P(bonus = y | all gamma kept, drafts x) == p(y | x), for every kept block x (section 7.3).
    blocks = 0
    for v, gamma, p, q in toy_pairs(30):
        bonus = {}
        for (n, block), pr in step_outcomes(p, q, gamma, "token").items():
            if n == gamma:
                bonus.setdefault(block[:gamma], [F(0)] * v)[block[gamma]] += pr
        for drafts, row in bonus.items():
            assert [b / sum(row) for b in row] == list(p(drafts)), (v, gamma, drafts)
        blocks += len(bonus)
    assert blocks >= 50        # kept blocks checked (some models never keep all: zeros in p where q drafts)


@st.composite
def row_pairs(draw):
    """Two distributions over one vocabulary of 2..6 tokens, from integer weights 0..5 (zeros and ties occur)."""
    v = draw(st.integers(2, 6))
    p_weights, q_weights = (draw(st.lists(st.integers(0, 5), min_size=v, max_size=v).filter(any)) for _ in "pq")
    return [w / sum(p_weights) for w in p_weights], [w / sum(q_weights) for w in q_weights]


@pytest.mark.slow
@given(row_pairs(), st.integers(0, 10**6))
def test_a_correction_is_never_the_draft_it_replaces(rows, seed):
    # A rejected x has p(x) < q(x), where max(0, p - q) is zero (lesson 03, section 7.1, part 3).
    (p_row, q_row), v, rng = rows, len(rows[0]), random.Random(seed)
    for x in (x for x in range(v) if q_row[x] > 0):
        out = speculative_sample([x], [q_row], [p_row], rng)
        assert out["acceptance_count"] == 1 or out["bonus_token"] != x


# ---- going on after a rejection ---------------------------------------------------------------------------------
def copy_target(s):
    """p(. | ()) = (1/4, 3/4); after any token, p puts all its mass on that token again."""
    return (F(1, 4), F(3, 4)) if not s else tuple(F(int(y == s[-1])) for y in range(2))


def test_no_early_stop_by_hand():
    """V = 2, gamma = 2, q = (1/2, 1/2) after every prefix, p = `copy_target`. Target: (0, 0) 1/4, (1, 1) 3/4
    (and (0, 0, 0) 1/4, (1, 1, 1) 3/4).

    Position 0 (p_0 = (1/4, 3/4)): a drafted 1 is kept (p/q = 3/2 >= 1); a drafted 0 is kept w.p. (1/4)/(1/2) = 1/2,
    else corrected to 1 (the residual norm(max(0, p_0 - q_0)) = (0, 1)). So y_1 = 0 w.p. 1/4, and y_1 = 1 w.p. 3/4,
    of which 1/4 comes from a corrected 0.
    Position 1, verified against the rows after the DRAFTED x_0: p(. | x_0) is one-hot on x_0 and x_1 ~ (1/2, 1/2);
    x_1 = x_0 is kept (p/q = 2 >= 1), otherwise rejected and corrected to x_0. So y_2 = x_0, whatever y_1 was.
    First two tokens: (0, 0) 1/4 [x_0 = 0 kept], (1, 0) 1/4 [x_0 = 0 corrected], (1, 1) 1/2 [x_0 = 1].
    TV = 1/2 (|1/4 - 1/4| + |1/4 - 0| + |1/2 - 3/4|) = 1/4.
    Third token: the bonus from p(. | x_0, x_1), one-hot on x_1, and x_1 ~ (1/2, 1/2) independently: each pair
    splits in halves: (0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1) 1/8 each, (1, 1, 0), (1, 1, 1) 1/4 each.
    TV = 1/2 (|1/8 - 1/4| + 1/8 + 1/8 + 1/8 + 1/4 + |1/4 - 3/4|) = 1/2 * 5/4 = 5/8.
    """
    p, q = copy_target, (lambda s: (F(1, 2), F(1, 2)))
    two = emitted_distribution(p, q, 2, 2, "token-no-stop")
    assert two == {(0, 0): F(1, 4), (1, 0): F(1, 4), (1, 1): F(1, 2)}
    assert total_variation(two, chain_rule(p, 2)) == F(1, 4)
    assert total_variation(emitted_distribution(p, q, 3, 2, "token-no-stop"), chain_rule(p, 3)) == F(5, 8)
    assert total_variation(emitted_distribution(p, q, 1, 2, "token-no-stop"), chain_rule(p, 1)) == 0  # y_1 is exact
    for n in (2, 3):                                                 # stopping at the first rejection: exact
        assert emitted_distribution(p, q, n, 2, "token") == chain_rule(p, n) == spec_enumeration(p, q, n, 2)


def test_no_early_stop_is_invisible_when_rows_ignore_the_prefix():
    # The mistake's distance is exactly 0 on fixed rows (the row after x_i IS the row after y), and > 0 on the
    # same models with their prefix-dependent rows.
    lossy = 0
    for v, gamma, p, q in toy_pairs(30):
        fixed_p, fixed_q = (lambda s, r=p(()): r), (lambda s, r=q(()): r)
        assert emitted_distribution(fixed_p, fixed_q, 3, gamma, "token-no-stop") == chain_rule(fixed_p, 3), (v, gamma)
        lossy += total_variation(emitted_distribution(p, q, 3, gamma, "token-no-stop"), chain_rule(p, 3)) > 0
    assert lossy >= 15


# ---- Monte Carlo of speculative_sample: the second token and the bonus --------------------------------------------
P_MC, Q_MC, GAMMA, N = toy_model(3, 316), toy_model(3, 317), 2, 6000


def as_floats(model):
    return lambda s: [float(v) for v in model(s)]


def run_speculative(seed, early_stop=True, bonus_row=GAMMA):
    """N generations from the empty prefix: ({(first,): [second, ...]}, {kept drafts: [bonus, ...]}).

    early_stop=False: after a rejected x_0, go on verifying x_1 against the rows after the drafted x_0 (the mistake).
    bonus_row=GAMMA - 1: the target's row after x_<gamma-1 handed over as row gamma (the off-by-one).
    """
    p, q, rng = as_floats(P_MC), as_floats(Q_MC), random.Random(seed)

    def step(text):
        x = []
        for _ in range(GAMMA):
            x.append(rng.choices(range(3), weights=q(text + tuple(x)))[0])
        p_rows = [p(text + tuple(x[:i])) for i in range(GAMMA + 1)]
        p_rows[GAMMA] = p_rows[bonus_row]
        out = speculative_sample(x, [q(text + tuple(x[:i])) for i in range(GAMMA)], p_rows, rng)
        return x, out, out["accepted_tokens"] + [out["bonus_token"]]

    seconds, bonuses = {}, {}
    for _ in range(N):
        x, out, tokens = step(())
        if out["acceptance_count"] == GAMMA:
            bonuses.setdefault(tuple(x), []).append(out["bonus_token"])
        if len(tokens) == 1 and early_stop:
            tokens += step(tuple(tokens))[2][:1]
        elif len(tokens) == 1:
            rest = speculative_sample(x[1:], [q(tuple(x[:1]))], [p(tuple(x[:1]))], rng)
            tokens += (rest["accepted_tokens"] + [rest["bonus_token"]])[:1]
        seconds.setdefault((tokens[0],), []).append(tokens[1])
    return seconds, bonuses


def worst_prefix_z(samples_by_prefix):
    """Largest per-bin z over every prefix, each prefix's samples against the target's row after it."""
    return max(max_z(samples, as_floats(P_MC)(prefix)) for prefix, samples in samples_by_prefix.items())


@pytest.fixture(scope="module")
def right():
    return run_speculative(seed=11)


@pytest.mark.slow
def test_second_token_given_the_first_follows_the_target(right):
    seconds, _ = right
    assert sum(len(s) for s in seconds.values()) == N and len(seconds) >= 2
    assert worst_prefix_z(seconds) < Z_MAX


@pytest.mark.slow
def test_bonus_given_all_kept_follows_the_row_after_the_drafts(right):
    _, bonuses = right
    assert sum(len(b) for b in bonuses.values()) > 0.25 * N          # exact P(all kept) = 0.36
    assert worst_prefix_z(bonuses) < Z_MAX


@pytest.mark.slow
def test_the_same_statistics_reject_two_wrong_verifiers():
    # Their expected worst |z| at this N, from their exact distributions: about 49 (no early stop) and 35 (row 1).
    no_stop_seconds, _ = run_speculative(seed=12, early_stop=False)
    _, off_by_one_bonuses = run_speculative(seed=13, bonus_row=GAMMA - 1)
    assert worst_prefix_z(no_stop_seconds) > 3 * Z_MAX
    assert worst_prefix_z(off_by_one_bonuses) > 3 * Z_MAX
