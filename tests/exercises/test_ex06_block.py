"""Exercise 6 (exercises/ex06_block): its reference solution, its exact cases, its statistics, its catalogue.

Independent references: `exact.step_outcomes` (the exact enumeration, in Fractions) for the laws the grader's
own enumerator computes; `block.block_verify` for the rule behind the catalogue and for the solution, which is
loaded from its file (it imports nothing from specdec) and called with the same seeds on many random blocks
(exact zeros, p == q rows, K = 0, missing bonus rows): both return the same dict and refuse the same bad
input; the statement (exercises/ex06_block/README.md) for the public cases. Each learner file in
tests/submissions/ex06 gets its own diagnosis in test_catalogue.py; the statistics' intervals: test_stats.py.
"""

import doctest
import math
import os
import random
import re
from fractions import Fraction

import pytest

from exercises.common import stats
from exercises.ex06_block.grading import MISTAKES, RULES, rule_law, wrong_block
from grader import check
from grader.diagnose import signatures
from grader.registry import exercise
from helpers import ROOT, SUBS, load
from specdec.block import block_verify
from specdec.exact import step_outcomes

EX = exercise("ex06")
PATH = os.path.join(ROOT, "exercises", "ex06_block", "solution.py")


STATISTICAL = ("accepted length, one doubtful token", "accepted length, a fixed draft",
               "joint law of kept and emitted tokens")


def toy_rows(gen, k, vocab, zeros=True):
    """k draft rows (every entry > 0) and k + 1 target rows (zeros allowed), as Fractions."""
    def row(floor):
        weights = [gen.randint(floor, 4) for _ in range(vocab)]
        weights[gen.randrange(vocab)] += 1
        return [Fraction(w, sum(weights)) for w in weights]
    return [row(1) for _ in range(k)], [row(0 if zeros else 1) for _ in range(k + 1)]


def theory_law(q, p, k, rule="block"):
    return step_outcomes(lambda s: p[len(s)], lambda s: q[len(s)], k, rule)


# ---- the reference solution, against the library ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def solution():
    return load(PATH)


def random_block(gen):
    v, k = gen.randint(1, 5), gen.randint(0, 4)
    def row():
        w = [gen.choice([0, 0, 1, 2, 5, gen.random()]) for _ in range(v)]
        w[gen.randrange(v)] += 1                                        # some mass
        return [x / sum(w) for x in w]
    q = [row() for _ in range(k)]
    p = [row() for _ in range(k + gen.choice([0, 1, 1, 1, 2]))]
    if k and gen.random() < 0.2:
        p[:k] = [list(r) for r in q]                                    # p == q: 0/0 thresholds
    tokens = [gen.choices(range(v), r)[0] for r in q]
    return tokens, q, p


@pytest.mark.slow
def test_the_solution_equals_block_verify_on_seeded_cases(solution):
    gen, kept = random.Random(6), 0
    for case in range(2000):
        tokens, q, p = random_block(gen)
        want = block_verify(tokens, q, p, rng=random.Random(case))
        assert solution.block_verify(tokens, q, p, random.Random(case)) == want, case
        kept += want["acceptance_count"]
    assert kept > 1000                                                  # the cases exercise the rule


@pytest.mark.parametrize("args", [
    ([0], [[0.0, 1.0]], [[0.5, 0.5]]),           # q(x) = 0
    ([0, 1], [[0.5, 0.5]], [[0.5, 0.5]] * 3),    # len(draft_probs) != K
    ([0], [[0.5, 0.5]], []),                     # target too short
    ([2], [[0.5, 0.5]], [[0.5, 0.5]]),           # id outside [0, V)
    ([0], [[0.5, 0.5]], [[0.9, 0.9]]),           # not a distribution
])
def test_the_solution_refuses_what_block_verify_refuses(solution, args):
    with pytest.raises(ValueError):
        block_verify(*args, rng=0)
    with pytest.raises(ValueError):
        solution.block_verify(*args, random.Random(0))


def test_the_solution_doctests(solution):
    result = doctest.testmod(solution)
    assert result.attempted >= 2 and result.failed == 0


# ---- the grader's enumerator and its catalogue, against the library --------------------------------------------------
@pytest.mark.slow
def test_the_graders_law_of_the_right_rule_and_of_vllm_ascend_7807_are_theorys():
    gen = random.Random(61)
    for _ in range(60):
        k, vocab = gen.randint(0, 3), gen.randint(2, 3)
        q, p = toy_rows(gen, k, vocab)
        assert rule_law(q, p, k) == theory_law(q, p, k)
        # exact.py's "block-per-token" is the bug as shipped: the token rule's test AND its residual.
        assert rule_law(q, p, k, test="token", residual_weight=False) == theory_law(q, p, k, "block-per-token")


def test_the_catalogues_rule_without_a_switch_is_block_verify_draw_for_draw():
    gen = random.Random(62)
    for seed in range(600):
        k, vocab = gen.randint(0, 3), gen.randint(2, 4)
        q, p = (([float(v) for v in row] for row in rows) for rows in toy_rows(gen, k, vocab))
        q, p = list(q), list(p)[:k + gen.randint(0, 1)]
        tokens = [gen.choices(range(vocab), weights=row)[0] for row in q]
        assert wrong_block(tokens, q, p, random.Random(seed)) == block_verify(tokens, q, p, random.Random(seed))


@pytest.mark.slow
def test_every_mistake_of_the_rule_changes_the_law_somewhere_and_the_others_never():
    gen, changed = random.Random(63), set()
    for _ in range(40):
        q, p = toy_rows(gen, 2, 3)
        right = theory_law(q, p, 2)
        changed |= {name for name, switch in RULES.items() if rule_law(q, p, 2, **switch) != right}
    assert changed == set(RULES) == {m.name for m in MISTAKES} - {"module_random", "no_length_check"}


# ---- public and exact cases ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_public_cases_are_the_statements_worked_examples():
    text = open(os.path.join(ROOT, "exercises", "ex06_block", "README.md")).read()
    examples = re.findall(r"^(block_verify\(.*\))\n# (\{.*\})$", text, flags=re.M)
    public = [c for c in EX.cases(0) if not c.hidden]
    assert len(examples) == len(public) == 3
    for (call, result), case in zip(examples, public):
        args = eval(call.replace("block_verify", "", 1), {"random": random})
        assert case.calls[0]["args"][:3] == list(args[:3])
        assert case.expected == result == repr(block_verify(*args))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_exact_cases_give_one_answer_whatever_the_uniforms(seed):
    exact = [c for c in EX.cases(seed) if c.expected and c.expected != "raises ValueError"]
    assert len([c for c in exact if not c.is_twin]) == 9 and len(exact) == 12   # and the 3 examples renamed
    for case in exact:
        tokens, q, p, _ = case.calls[0]["args"]
        assert {repr(block_verify(tokens, q, p, random.Random(s))) for s in range(150)} == {case.expected}, case.name


# ---- the statistics --------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_statistical_cases_hold_a_correct_function_to_the_exact_law_and_catch_the_mistakes(seed=0):
    cases = {c.name: c for c in EX.cases(seed)}
    for name in STATISTICAL:
        calls = cases[name].calls
        q, p = calls[0]["args"][1], calls[0]["args"][2]
        k = len(q)
        law = theory_law([[Fraction(v) for v in r] for r in q], [[Fraction(v) for v in r] for r in p], k)
        if name.startswith("accepted length"):
            law = {n: sum(v for (m, _), v in law.items() if m == n) for n in range(k + 1)}
            law = {n: v for n, v in law.items() if v}
        tests, false_alarm = stats.law_test(law, len(calls))
        assert len(calls) == 2000 and false_alarm <= stats.LAW_ALPHA
        drafts = [tuple(c["args"][0]) for c in calls]  # drawn from q by the parent
        for x in set(drafts):
            share = Fraction(drafts.count(x), len(drafts))
            assert abs(share - math.prod(Fraction(q[i][t]) for i, t in enumerate(x))) < 0.05
    first = {"accepted length, one doubtful token": "ratio_without_q", "accepted length, a fixed draft":
             "mass_without_weight", "joint law of kept and emitted tokens": "per_token_residual"}
    sigs = signatures(EX, seed, EX.cases(seed))
    for name, mistake in first.items():
        assert name in sigs[mistake]
        assert not any(name in sigs[m] for m in ("bonus_wrong_row", "no_length_check"))
        assert name in sigs["module_random"]  # the law is right, but its replayed calls give other outputs


@pytest.mark.slow
def test_a_correct_function_with_another_order_of_draws_scores_full_marks(seed=0):
    module = {}
    exec(open(os.path.join(SUBS, "ex06", "good_lazy_order.py")).read(), module)
    report = check(module["block_verify"], exercise="ex06", quiet=True, seed=seed)
    assert (report.score, report.diagnosis) == (100, ""), [(c.name, c.message) for c in report.cases if not c.passed]


@pytest.mark.slow
def test_another_seed_keeps_every_signature_distinct_and_its_statistics_sound():
    test_statistical_cases_hold_a_correct_function_to_the_exact_law_and_catch_the_mistakes(seed=31337)
    sigs = signatures(EX, 31337, EX.cases(31337))
    assert all(sigs.values()) and len(set(sigs.values())) == len(sigs)
    test_a_correct_function_with_another_order_of_draws_scores_full_marks(seed=31337)
