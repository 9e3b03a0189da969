"""exercises/common/samplers.py and the sampler exercises' `possible` (ex04: the token rule, ex06: block verification).

Bad-input cases told apart by their size: every one of ex04's and ex06's was K = 2 over two tokens, which no
valid case was, so raising there took 11/100 on ex04 with no check (tests/submissions/ex04/
hostile_bad_input_by_size.py). Each is now a valid case's twin but for its fault (`samplers.invalid`).
`possible(tokens, q, p)`, which the statistical cases use to refuse outputs impossible for their inputs, is
exactly the support of the rule's law, from specdec.exact's enumeration.
"""

import itertools
import os
import random
from fractions import Fraction

import pytest

from exercises.common.rows import dyadic_row
from exercises.ex04_sampler import grading as ex04
from exercises.ex06_block import grading as ex06
from grader import check, grade_file
from grader.registry import exercise
from helpers import NEEDS_BWRAP, SUBS
from specdec.exact import step_outcomes

OPTIONS = {"timeout": 5.0, "max_seconds": 40.0, "mode": "bwrap", "seed": 314159}


# ---- bad-input cases told apart by their size ------------------------------------------------------------------------
def _by_size(draft_tokens, draft_probs, target_probs, rng_or_samples):
    """The hostile file's rule: raise at K = 2 over two tokens (where every bad-input case of ex04 and ex06 was)."""
    rows = draft_probs or target_probs
    if len(draft_tokens) == 2 and rows and len(rows[0]) == 2:
        raise ValueError("bad input (or so its size says)")
    return None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ex04", "ex06"])
def test_a_bad_input_case_is_the_shape_cases_twin_but_for_its_fault(name):
    for seed in (0, OPTIONS["seed"]):
        cases = exercise(name).cases(seed)
        shape = next(c for c in cases if c.name.startswith("shape on a random"))
        tokens, q, p, _ = shape.calls[0]["args"]
        for case in (c for c in cases if c.expected == "raises ValueError"):
            bad_tokens, bad_q, bad_p, _ = case.calls[0]["args"]
            assert len(bad_tokens) == len(tokens) and {len(r) for r in bad_q + bad_p} == {len(p[0])}, case.name
    assert check(_by_size, exercise=name, quiet=True, seed=OPTIONS["seed"]).score == 0   # 11 (ex04), 9 (ex06) before


@pytest.mark.slow
@NEEDS_BWRAP
def test_raising_at_the_bad_input_cases_size_earns_nothing():
    report = grade_file(os.path.join(SUBS, "ex04", "hostile_bad_input_by_size.py"), "ex04", **OPTIONS)
    assert (report.score, report.status) == (0, "failed")  # 11/100 before


# ---- the outputs a statistical case allows ---------------------------------------------------------------------------
def _support(rule, q, p, k):
    """{(n kept, emitted block)} with probability > 0, from specdec.exact's enumeration (independent of the grader)."""
    law = step_outcomes(lambda s: p[len(s)], lambda s: q[len(s)], k, rule)
    return {key for key, prob in law.items() if prob > 0}


@pytest.mark.parametrize("module, rule", [(ex04, "token"), (ex06, "block")])
def test_possible_outputs_are_exactly_the_support_of_the_rules_law(module, rule):
    """Over every draft of q, the outputs `possible` allows are the outcomes of positive probability of the
    reference enumeration: nothing a correct sampler can give is refused, nothing it cannot is allowed."""
    rng = random.Random(4)
    for _ in range(30):
        k, vocab = rng.randint(1, 3), rng.randint(2, 3)
        q = [dyadic_row(rng, vocab, total=8, denominator=8) for _ in range(k)]
        p = [dyadic_row(rng, vocab, total=8, denominator=8) for _ in range(k + 1)]   # zeros and ties included
        allowed = set()
        for tokens in itertools.product(*[[x for x in range(vocab) if q[i][x] > 0] for i in range(k)]):
            allowed |= {(n, tuple(tokens[:n]) + (y,)) for n, y in module.possible(list(tokens), q, p)}
        exact_q, exact_p = [[Fraction(v) for v in row] for row in q], [[Fraction(v) for v in row] for row in p]
        assert allowed == _support(rule, exact_q, exact_p, k), (q, p)
