"""specdec.rules, the home of the chain rules: its decisions, its row operations in two backends, greedy and typical.

References: the formulas as the papers write them (min(1, p/q), z / (z + 1 - w), Medusa's bar),
evaluated here directly; hand-worked cases; and the plain-Python public functions, which the NumPy
backend of speculative generation (`decode.NumpyRows`) must match draw for draw.
"""

import math
import random

import numpy as np
import pytest

from specdec import speculative_sample
from specdec.block import block_verify
from specdec.generation.decode import NumpyRows
from specdec.multidraft import TreeRows, tree_rule, verify_tree
from specdec.rules import (PlainRows, block_rule, block_threshold, graded_accepts, token_accepts, token_rule,
                           typical_rule, typical_threshold)
from specdec.typical import greedy_verify, typical_verify

GRID = [0.0, 1e-300, 0.1, 0.25, 0.5, 0.999999, 1.0, 2.0, 1e300]


def test_accept_tests_are_the_papers_formulas():
    """u <= min(1, p/q) (graded, u in [0, 1]) and u < min(1, p/q) (u in [0, 1)), written without the min."""
    for px in GRID:
        for qx in GRID[1:]:
            ratio = px / qx
            for u in [0.0, 0.1, 0.25, 0.5, 0.75, 0.999999, ratio if ratio <= 1 else 0.5]:
                assert graded_accepts(u, px, qx) == (u <= min(1.0, ratio))
                assert token_accepts(u, px, qx) == (u < min(1.0, ratio))
            assert graded_accepts(1.0, px, qx) == (1.0 <= min(1.0, ratio))      # u = 1 is allowed in the graded rule
    # boundary: u equal to the ratio is accepted by the graded test, rejected by the lossless one
    assert graded_accepts(0.25, 0.1, 0.4) and not token_accepts(0.25, 0.1, 0.4)


def test_accept_tests_work_elementwise_for_batched_code():
    gen = np.random.default_rng(0)
    u, px, qx = gen.random(1000), gen.random(1000), gen.random(1000) + 1e-3
    ratio = px / qx
    u[:20] = np.where(ratio < 1, ratio, u)[:20]                             # ties on purpose (u < 1 stays < 1)
    want_graded = [u[i] <= min(1.0, px[i] / qx[i]) for i in range(1000)]
    want_token = [u[i] < min(1.0, px[i] / qx[i]) for i in range(1000)]
    assert graded_accepts(u, px, qx).tolist() == want_graded
    assert token_accepts(u, px, qx).tolist() == want_token


@pytest.mark.parametrize("w, z, h", [
    (1, 0, 1),            # 0/0: a prefix p supports fully is kept
    (1, 0.3, 1),          # z / z
    (0.5, 0.0, 0.0),      # nothing to hand out: never stop here
    (0.5, 0.5, 0.5),      # 0.5 / (0.5 + 0.5)
    (0.25, 0.25, 0.25),   # 0.25 / (0.25 + 0.75)
    (0, 0, 0),            # a dead prefix
])
def test_block_threshold(w, z, h):
    assert block_threshold(w, z) == h


def test_typical_threshold_by_hand():
    # uniform over 10: H = ln 10, 0.3 * 0.1 = 0.03 < 0.09; one-hot: H = 0, min(0.09, 0.3) = 0.09
    assert typical_threshold(math.log(10)) == pytest.approx(0.03, abs=1e-15)
    assert typical_threshold(0.0) == 0.09
    assert PlainRows.entropy([0.5, 0.5, 0.0]) == pytest.approx(math.log(2), abs=1e-15)


# ---- greedy and typical, the public functions ---------------------------------------------------------------
def test_greedy_verify_by_hand():
    p = [[0.1, 0.2, 0.7], [0.5, 0.3, 0.2], [0.4, 0.4, 0.2]]
    assert greedy_verify([2, 1], p) == {"accepted_tokens": [2], "bonus_token": 0, "acceptance_count": 1}
    assert greedy_verify([2, 0], p) == {"accepted_tokens": [2, 0], "bonus_token": 0, "acceptance_count": 2}  # tie
    assert greedy_verify([2, 0], p[:2]) == {"accepted_tokens": [2, 0], "bonus_token": None, "acceptance_count": 2}
    assert greedy_verify([], []) == {"accepted_tokens": [], "bonus_token": None, "acceptance_count": 0}


def test_typical_verify_by_hand():
    """p_0 = [0.9, 0.06, 0.04]: H = 0.392 nats, bar = min(0.09, 0.3 * 0.675 = 0.203) = 0.09: only 0 passes.
    p_1 = 10 ids at 0.1: bar = min(0.09, 0.3 * 0.1) = 0.03: every id passes."""
    p = [[0.9, 0.06, 0.04] + [0.0] * 7, [0.1] * 10, [0.0, 0.0, 1.0] + [0.0] * 7]
    assert typical_verify([0, 7], p) == {"accepted_tokens": [0, 7], "bonus_token": 2, "acceptance_count": 2}
    assert typical_verify([1, 7], p) == {"accepted_tokens": [], "bonus_token": 0, "acceptance_count": 0}
    assert typical_verify([1, 7], p, eps=0.05) == {"accepted_tokens": [1, 7], "bonus_token": 2, "acceptance_count": 2}
    assert typical_verify([1], p, eps=0.05, delta=0.0)["acceptance_count"] == 1   # bar 0: p(x) > 0 suffices


@pytest.mark.parametrize("args, error, match", [
    (([0, 1], [[0.5, 0.5]]), ValueError, r"len\(target_probs\) is 1 but len\(draft_tokens\) is 2"),
    (([3], [[0.5, 0.5]]), ValueError, r"draft_tokens\[0\] is 3"),
    (([0], [[0.5, 0.5], [0.2, 0.3]]), ValueError, r"target_probs\[1\] sums to 0.5"),
    (([0], [[0.5, 0.5], [1.0]]), ValueError, r"target_probs\[1\] has 1 entries but target_probs\[0\] has 2"),
    ((0, [[0.5, 0.5]]), TypeError, r"draft_tokens must be a sequence"),
])
def test_greedy_and_typical_validation_names_the_argument(args, error, match):
    for function in (greedy_verify, typical_verify):
        with pytest.raises(error, match=match):
            function(*args)


@pytest.mark.parametrize("bad, error", [(-0.1, ValueError), (float("nan"), ValueError), ("0.09", TypeError),
                                        (True, TypeError)])
def test_typical_parameters_are_checked(bad, error):
    for name in ("eps", "delta"):
        with pytest.raises(error, match=f"{name} must be a number >= 0"):
            typical_verify([0], [[0.5, 0.5]], **{name: bad})


# ---- the NumPy backend: the same rules on NumPy rows, draw for draw ------------------------------------------
def random_case(gen, k_max=4):
    v, k = int(gen.integers(2, 7)), int(gen.integers(0, k_max + 1))
    q = gen.dirichlet(np.full(v, 0.7), k)
    p = gen.dirichlet(np.full(v, 0.7), k + 1)
    q[q < 0.02] = 0.0                                              # exact zeros, as real rows have
    q /= q.sum(1, keepdims=True) if k else 1
    return [int(gen.choice(v, p=row)) for row in q], q, p


def test_numpy_row_operations_equal_the_plain_ones():
    gen = np.random.default_rng(1)
    for _ in range(300):
        _, q, p = random_case(gen)
        a, b = p[0], (q[0] if len(q) else p[-1])
        for w in (1, 0.5, 0.123):
            assert NumpyRows.residual(a, b, w).tolist() == pytest.approx(PlainRows.residual(a.tolist(), b.tolist(), w),
                                                                        abs=1e-15)
            assert NumpyRows.residual_mass(a, b, w) == pytest.approx(PlainRows.residual_mass(a, b, w), abs=1e-15)
        assert NumpyRows.argmax(np.round(a, 1)) == PlainRows.argmax(np.round(a, 1).tolist())   # ties
        assert NumpyRows.entropy(a) == pytest.approx(PlainRows.entropy(a.tolist()), abs=1e-13)
        removed = [0, len(a) - 1]
        assert NumpyRows.without(b, removed).tolist() == pytest.approx(TreeRows.without(b.tolist(), removed), abs=1e-15)
        seed = int(gen.integers(1 << 30))
        assert NumpyRows.sample(a, random.Random(seed)) == PlainRows.sample(a.tolist(), random.Random(seed))


@pytest.mark.slow
def test_rules_on_numpy_rows_equal_the_plain_python_functions():
    """The loops decode.py runs (rules.* with NumpyRows) against the public plain functions, same uniforms."""
    gen = np.random.default_rng(2)
    for case in range(300):
        x, q, p = random_case(gen)
        out = speculative_sample(x, q.tolist(), p.tolist(), rng=random.Random(case))
        assert token_rule(x, q, p, random.Random(case), NumpyRows) == (out["acceptance_count"], out["bonus_token"])
        out = block_verify(x, q.tolist(), p.tolist(), rng=random.Random(case))
        assert block_rule(x, q, p, random.Random(case), NumpyRows) == (out["acceptance_count"], out["bonus_token"])
        out = typical_verify(x, p.tolist(), eps=0.2)
        assert typical_rule(x, p, 0.2, 0.3, NumpyRows) == (out["acceptance_count"], out["bonus_token"])
        # a tree: two children of the root (distinct), one grandchild under the first
        v = p.shape[1]
        kids = [int(t) for t in gen.choice(v, size=2, replace=False, p=p[0])]
        rows_q = [p[-1], p[0], None, None]
        tokens, parents = kids + [int(gen.choice(v, p=p[0]))], [-1, -1, 0]
        rows_p = [p[0], p[-1], p[0], p[-1]]
        out = verify_tree(tokens, parents, [r if r is None else r.tolist() for r in rows_q],
                          [r.tolist() for r in rows_p], rng=random.Random(case))
        got = tree_rule(tokens, parents, rows_q, rows_p, random.Random(case), rows=NumpyRows)
        assert got == (out["accepted_nodes"], out["bonus_token"])


def test_the_new_rules_are_plain_python():
    """block, multidraft, typical, rules and exact run in a child where NumPy cannot be imported."""
    import subprocess
    import sys
    import textwrap
    child = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "numpy" or name.startswith("numpy."):
                    raise ImportError("numpy is blocked")
        sys.meta_path.insert(0, Block())
        from fractions import Fraction as F
        import specdec
        from specdec.exact import expected_accepted
        q, p = [[2 / 3, 1 / 3]] * 2, [[1 / 3, 2 / 3], [1 / 3, 2 / 3], [0.0, 1.0]]
        print(specdec.block_verify([0, 1], q, p, rng=0)["acceptance_count"],
              specdec.multi_draft_sample([1, 0], [[0.5, 0.5], [1.0, 0.0]], [1.0, 0.0], rng=0)["token"],
              specdec.verify_tree([1], [-1], [[0.5, 0.5], None], [[0.0, 1.0], [1.0, 0.0]], rng=0)["bonus_token"],
              specdec.typical_verify([0], [[0.05, 0.95]])["bonus_token"],
              expected_accepted(lambda s: (F(1, 3), F(2, 3)), lambda s: (F(2, 3), F(1, 3)), 2, "block"),
              any(m.startswith("numpy") for m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "0", "0", "1", "11/9", "False"]
