"""multidraft: recursive rejection over k candidates, and token trees, against hand-worked and exact references.

References: hand-worked fractions (below); `exact.multi_draft_distribution` and
`exact.step_outcomes(..., "tree")` (checked against the target in test_exact_rules.py);
`speculative_sample` (a chain is a tree with one child per node, draw for draw); and
fixed-seed frequencies with a stated tolerance, which the classic mistakes fail.
"""

import random
from fractions import Fraction as F

import pytest

from helpers import Scripted, inverse_cdf_point, worst_z
from references import normalized_excess, pairs
from specdec import speculative_sample
from specdec.multidraft import (draw_candidates, multi_draft_sample, verify_tree, without_replacement_probs)
from specdec.exact import multi_draft_distribution, step_outcomes, toy_model


def test_without_replacement_rows_by_hand():
    # q = [0.5, 0.25, 0.25]; after drawing 0: [0, 0.5, 0.5]; after 0 and 2: [0, 1, 0]
    assert without_replacement_probs([0.5, 0.25, 0.25], [0, 2, 1]) == [[0.5, 0.25, 0.25], [0.0, 0.5, 0.5],
                                                                       [0.0, 1.0, 0.0]]
    assert without_replacement_probs([0.5, 0.5], []) == []


def test_recursive_rejection_by_hand():
    """p = [2/3, 0, 1/3], q = [1/2, 1/2, 0], two candidates drawn without replacement.
    Draws (0, 1) or (1, 0), each 1/2. (0, 1): r_1(0)/q_1(0) = (2/3)/(1/2) > 1: emits 0.
    (1, 0): p(1) = 0 rejects 1; r_2 = normalize([1/6, 0, 1/3]) = [1/3, 0, 2/3]; q_2 = [1, 0, 0]:
    0 is kept w.p. 1/3, else r_3 = normalize(max(0, r_2 - q_2)) = [0, 0, 1] gives 2.
    P(0) = 1/2 + 1/2 * 1/3 = 2/3, P(2) = 1/2 * 2/3 = 1/3: p. Verified against q itself instead of
    q_2 = [1, 0, 0] (the mistake), 0 is kept w.p. (1/3) / (1/2) = 2/3: P(0) = 1/2 + 1/3 = 5/6.
    """
    p, q = [F(2, 3), F(0), F(1, 3)], [F(1, 2), F(1, 2), F(0)]
    assert multi_draft_distribution(p, q, 2) == p
    assert multi_draft_distribution(p, q, 2, naive=True) == [F(5, 6), F(0), F(1, 6)]
    # the deterministic branches of multi_draft_sample
    rows = without_replacement_probs([0.5, 0.5, 0.0], [0, 1])
    assert all(multi_draft_sample([0, 1], rows, [2 / 3, 0.0, 1 / 3], rng=s) == {"token": 0, "accepted_index": 0}
               for s in range(20))


def test_no_candidates_draws_from_p():
    assert multi_draft_sample([], [], [0.0, 1.0], rng=1) == {"token": 1, "accepted_index": None}


@pytest.mark.parametrize("args, error, match", [
    (([0, 0], [[0.5, 0.5], [0.0, 1.0]], [0.5, 0.5]), ValueError, r"draft_probs\[1\]\[0\] is 0"),  # repeat, w/o repl.
    (([0], [[0.5, 0.5]] * 2, [0.5, 0.5]), ValueError, r"len\(draft_probs\) is 2 but len\(candidates\) is 1"),
    (([0], [[0.5, 0.25, 0.25]], [0.5, 0.5]), ValueError, r"draft_probs\[0\] has 3 entries"),
    (([2], [[0.5, 0.5]], [0.5, 0.5]), ValueError, r"candidates\[0\] is 2"),
    (([0], [[0.5, 0.5]], [0.7, 0.7]), ValueError, r"target_probs sums to 1.4"),
])
def test_multi_draft_validation(args, error, match):
    with pytest.raises(error, match=match):
        multi_draft_sample(*args, rng=0)


def test_draw_candidates():
    gen = random.Random(1)
    for _ in range(50):
        c = draw_candidates([0.1, 0.2, 0.3, 0.4], 3, gen)
        assert len(set(c)) == 3
    assert sorted(draw_candidates([0.5, 0.0, 0.5], 5, 0)) == [0, 2]          # only two ids have mass
    assert len(draw_candidates([0.5, 0.5], 5, 0, replace=True)) == 5


# ---- fixed-seed statistics ---------------------------------------------------------------------------------
N = 6000
# Every count within Z_TOL standard errors sqrt(N pi (1 - pi)) of N pi, and never an outcome of probability 0.
# A correct sampler fails with probability below (number of outcomes) * 7e-6; the seeds make it repeatable.
Z_TOL = 4.5


P_ROW, Q_ROW = [0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4]   # TV(p, q) = 0.5


@pytest.mark.slow
@pytest.mark.parametrize("replace, rows_for, should_pass", [
    (True, "drawn", True),             # i.i.d. candidates, q_j = q
    (False, "drawn", True),            # distinct candidates, q_j = q without the earlier ones
    (False, "naive", False),           # distinct candidates verified against q itself: the mistake
])
def test_multi_draft_frequencies(replace, rows_for, should_pass):
    gen, counts = random.Random(11), {}
    for _ in range(N):
        c = draw_candidates(Q_ROW, 3, gen, replace=replace)
        rows = [Q_ROW] * len(c) if replace or rows_for == "naive" else without_replacement_probs(Q_ROW, c)
        y = multi_draft_sample(c, rows, P_ROW, gen)["token"]
        counts[y] = counts.get(y, 0) + 1
    z = worst_z(counts, dict(enumerate(P_ROW)), N)
    assert (z <= Z_TOL) == should_pass, z        # power: the mistake fails the very same test
    exact = multi_draft_distribution([F(v).limit_denominator(100) for v in P_ROW],
                                     [F(v).limit_denominator(100) for v in Q_ROW], 3, replace, rows_for == "naive")
    assert (exact == [F(5, 10), F(3, 10), F(2, 10), 0]) == should_pass   # the exact answer agrees


# ---- trees ---------------------------------------------------------------------------------------------------
def floats(row):
    return [float(v) for v in row]


def draw_tree(p_model, q_model, depth, width, gen, replace=False):
    """A full draft tree from toy models: (tokens, parents, draft rows, target rows), root row first."""
    tokens, parents, paths, frontier = [], [], {-1: ()}, [-1]
    for _ in range(depth):
        new = []
        for f in frontier:
            for x in draw_candidates(floats(q_model(paths[f])), width, gen, replace=replace):
                tokens.append(x)
                parents.append(f)
                paths[len(tokens) - 1] = paths[f] + (x,)
                new.append(len(tokens) - 1)
        frontier = new
    contexts = [()] + [paths[i] for i in range(len(tokens))]
    return tokens, parents, [floats(q_model(c)) for c in contexts], [floats(p_model(c)) for c in contexts]


@pytest.mark.slow
@pytest.mark.parametrize("replace, verify_as, should_pass", [
    (False, False, True),    # distinct siblings, verified as such (the default)
    (True, True, True),      # i.i.d. siblings
    (False, True, False),    # distinct siblings verified as if i.i.d. (q_j = q): the mistake
])
def test_tree_frequencies_match_the_exact_step(replace, verify_as, should_pass):
    p_model, q_model, gen, counts = toy_model(3, 12), toy_model(3, 112), random.Random(5), {}
    for _ in range(N):
        tokens, parents, q_rows, p_rows = draw_tree(p_model, q_model, 2, 2, gen, replace)
        out = verify_tree(tokens, parents, q_rows, p_rows, gen, replace=verify_as)
        key = (out["acceptance_count"], tuple(out["accepted_tokens"]) + (out["bonus_token"],))
        counts[key] = counts.get(key, 0) + 1
        assert out["accepted_tokens"] == [tokens[i] for i in out["accepted_nodes"]]
    exact = step_outcomes(p_model, q_model, 2, "tree", width=2, replace=replace)
    z = worst_z(counts, exact, N)
    assert (z <= Z_TOL) == should_pass, z        # power: the mistake fails the very same test


def test_a_chain_is_a_tree_with_one_child_per_node():
    # same rule, same uniforms: verify_tree on a chain equals speculative_sample draw for draw
    gen = random.Random(3)
    for case in range(200):
        v, k = gen.randint(2, 4), gen.randint(0, 3)
        q, p = ([[gen.random() + 0.01 for _ in range(v)] for _ in range(r)] for r in (k, k + 1))
        q, p = ([[x / sum(row) for x in row] for row in rows] for rows in (q, p))
        x = [gen.choices(range(v), row)[0] for row in q]
        tree = verify_tree(x, list(range(-1, k - 1)), q + [None], p, rng=case)
        chain = speculative_sample(x, q, p, rng=case)
        assert tree.pop("accepted_nodes") == list(range(chain["acceptance_count"]))
        assert tree == chain, case


@pytest.mark.parametrize("args, kwargs, error, match", [
    (([1, 0], [-1, 1]), {}, ValueError, r"parents\[1\] is 1: a parent is -1"),               # not earlier
    (([1, 0], [-1, -2]), {}, ValueError, r"parents\[1\] is -2"),
    (([1, 1], [-1, -1]), {}, ValueError, r"tokens\[1\] is 1, as its sibling tokens\[0\]"),  # repeat w/o replacement
    (([1, 0], [-1, True]), {}, TypeError, r"parents\[1\] is True"),
    (([1, 0], [-1]), {}, ValueError, r"len\(parents\) is 1 but len\(tokens\) is 2"),
    (([1, 5], [-1, -1]), {}, ValueError, r"tokens\[1\] is 5"),
])
def test_tree_validation(args, kwargs, error, match):
    rows = [[0.5, 0.5], None, None]
    with pytest.raises(error, match=match):
        verify_tree(*args, rows, [[0.5, 0.5]] * 3, rng=0, **kwargs)


def test_tree_row_counts_and_missing_draft_rows_are_named():
    with pytest.raises(ValueError, match=r"len\(target_probs\) is 2 but the tree has 2 nodes"):
        verify_tree([1, 0], [-1, -1], [[0.5, 0.5], None, None], [[0.5, 0.5]] * 2)
    with pytest.raises(TypeError, match=r"draft_probs\[0\] must be a sequence"):   # the root has children
        verify_tree([1, 0], [-1, -1], [None, None, None], [[0.5, 0.5]] * 3)
    # repeated siblings are fine when drawn i.i.d.
    out = verify_tree([1, 1], [-1, -1], [[0.5, 0.5], None, None], [[0.5, 0.5]] * 3, rng=0, replace=True)
    assert out["acceptance_count"] == 1


# ---- decision by decision, with scripted uniforms (tests/references.py) ----------------------------------------------
@pytest.mark.parametrize("replace", [False, True], ids=["without replacement", "iid"])
def test_multi_draft_sample_decides_as_recursive_rejection(replace):
    checked = 0
    for i, (v, _, P, Q) in enumerate(pairs(40, seed=500)):
        p, q = list(P(())), list(Q(()))
        support = [t for t, pr in enumerate(q) if pr]
        c = [support[(i + j) % len(support)] for j in range(min(1 + i % 3, len(support)))]   # distinct
        rows = [q] * len(c) if replace else [[x / sum(r) for x in r] for r in
                                             ([F(0) if t in c[:j] else q[t] for t in range(v)] for j in range(len(c)))]
        # the first candidate j whose uniform falls below min(1, r_j / q_j) is kept; else y ~ the last r
        r, thresholds, residuals = p, [], []
        for j, x in enumerate(c):
            thresholds.append(min(F(1), r[x] / rows[j][x]))
            r = normalized_excess(r, rows[j]) or r
            residuals.append(r)
        for first in range(len(c) + 1):
            us = [float(t) / 2 if j == first else (1 + float(t)) / 2 for j, t in enumerate(thresholds)]
            if first < len(c) and thresholds[first] == 0:
                continue                                       # p has no mass there: it cannot be kept
            if any(thresholds[j] == 1 for j in range(first)):
                continue                                       # a ratio of 1 is always kept: no rejection before
            if first < len(c):
                expected = {"token": c[first], "accepted_index": first}
                tail = []
            else:
                last = residuals[-1] if c else p
                y = next(t for t, pr in enumerate(last) if pr)
                expected, tail = {"token": y, "accepted_index": None}, [inverse_cdf_point(last, y)]
            out = multi_draft_sample(c, [[float(x) for x in row] for row in rows], [float(x) for x in p],
                                     rng=Scripted(us[:first + 1] + tail))
            assert out == expected, (i, c, first)
            checked += 1
    assert checked > 40
    wr = without_replacement_probs([0.5, 0.25, 0.25], [0, 2])      # by hand: after 0, q = [0, 1/2, 1/2]
    assert wr == [[0.5, 0.25, 0.25], [0.0, 0.5, 0.5]]


# ---- types and bad input ---------------------------------------------------------------------------------------------
def test_numpy_inputs_give_python_ints_and_are_not_mutated():
    np = pytest.importorskip("numpy")
    q, p, c = np.array([[0.5, 0.5], [0.5, 0.5]]), np.array([0.3, 0.7]), np.array([0, 1])
    before = (q.copy(), p.copy(), c.copy())
    for seed in range(20):
        out = multi_draft_sample(c, q, p, rng=np.int64(seed))
        assert type(out["token"]) is int and out["accepted_index"] in (None, 0, 1)
        assert out["accepted_index"] is None or type(out["accepted_index"]) is int
    assert all((a == b).all() for a, b in zip(before, (q, p, c)))


def test_replace_must_be_a_bool():
    """replace="no" is truthy: before, verify_tree silently verified distinct siblings as i.i.d. draws."""
    from specdec.multidraft import draw_candidates, verify_tree
    with pytest.raises(TypeError, match="replace must be True .* got str 'no'"):
        verify_tree([1], [-1], [[0.5, 0.5], None], [[0.5, 0.5]] * 2, rng=0, replace="no")
    with pytest.raises(TypeError, match="replace must be True .* got int 1"):
        draw_candidates([0.5, 0.5], 2, rng=0, replace=1)
