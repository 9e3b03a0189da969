"""Exercise 6's cases (exercises/ex06_block/grading.py): its exact cases, its statistics, its catalogue of mistakes.

Independent references: `exact.step_outcomes` (the exact enumeration, in Fractions) for the laws
the grader's own enumerator computes; `block.block_verify` for the rule behind the catalogue;
binomial tails summed in Fractions for the statistical test's intervals; the statement
(exercises/ex06_block/README.md) for the public cases. Each learner file in
tests/submissions/ex06 gets its own diagnosis in tests/test_grading.py.
"""

import math
import os
import random
import re
from fractions import Fraction

import pytest

from specdec.block import block_verify
from exercises.common import stats
from grader import check
from grader.diagnose import signatures
from exercises.ex06_block.grading import MISTAKES, RULES, rule_law, wrong_block
from grader.registry import exercise
from specdec.exact import step_outcomes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EX = exercise("ex06")
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


# ---- the grader's enumerator and its catalogue, against the library -----------------------------------------
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


def test_every_mistake_of_the_rule_changes_the_law_somewhere_and_the_others_never():
    gen, changed = random.Random(63), set()
    for _ in range(40):
        q, p = toy_rows(gen, 2, 3)
        right = theory_law(q, p, 2)
        changed |= {name for name, switch in RULES.items() if rule_law(q, p, 2, **switch) != right}
    assert changed == set(RULES) == {m.name for m in MISTAKES} - {"module_random", "no_length_check"}


# ---- public and exact cases ---------------------------------------------------------------------------------
def test_the_public_cases_are_the_statements_worked_examples():
    text = open(os.path.join(ROOT, "exercises", "ex06_block", "README.md")).read()
    examples = re.findall(r"^(block_verify\(.*\))\n# (\{.*\})$", text, flags=re.M)
    public = [c for c in EX.cases(0) if not c.hidden]
    assert len(examples) == len(public) == 3
    for (call, result), case in zip(examples, public):
        args = eval(call.replace("block_verify", "", 1), {"random": random})
        assert case.calls[0]["args"][:3] == list(args[:3])
        assert case.expected == result == repr(block_verify(*args))


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_exact_cases_give_one_answer_whatever_the_uniforms(seed):
    exact = [c for c in EX.cases(seed) if c.expected and c.expected != "raises ValueError"]
    assert len(exact) == 9
    for case in exact:
        tokens, q, p, _ = case.calls[0]["args"]
        assert {repr(block_verify(tokens, q, p, random.Random(s))) for s in range(150)} == {case.expected}, case.name


# ---- the statistics -------------------------------------------------------------------------------------------
def test_the_acceptance_intervals_leave_out_exactly_the_stated_tails():
    n, t = 300, Fraction(1, 10)                  # a small n, so that the binomial is summed in Fractions
    tests, false_alarm = stats.law_test({"a": 1 - t, "b": t}, n)
    pmf = [math.comb(n, k) * t ** k * (1 - t) ** (n - k) for k in range(n + 1)]
    a = Fraction(stats.LAW_ALPHA) / 4              # two bins, two tails each
    _, _, _, lo, hi = tests[1]                      # the bin of "b": X ~ Binomial(300, 1/10)
    assert sum(pmf[:lo]) <= a < sum(pmf[:lo + 1]) and sum(pmf[hi + 1:]) <= a < sum(pmf[hi:])
    assert math.isclose(false_alarm, float(2 * (sum(pmf[:lo]) + sum(pmf[hi + 1:]))), rel_tol=1e-6)
    assert false_alarm <= stats.LAW_ALPHA


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


def test_a_correct_function_with_another_order_of_draws_scores_full_marks(seed=0):
    module = {}
    exec(open(os.path.join(ROOT, "tests", "submissions", "ex06", "good_lazy_order.py")).read(), module)
    report = check(module["block_verify"], exercise="ex06", quiet=True, seed=seed)
    assert (report.score, report.diagnosis) == (100, ""), [(c.name, c.message) for c in report.cases if not c.passed]


@pytest.mark.slow
def test_another_seed_keeps_every_signature_distinct_and_its_statistics_sound():
    test_statistical_cases_hold_a_correct_function_to_the_exact_law_and_catch_the_mistakes(seed=31337)
    sigs = signatures(EX, 31337, EX.cases(31337))
    assert all(sigs.values()) and len(set(sigs.values())) == len(sigs)
    test_a_correct_function_with_another_order_of_draws_scores_full_marks(seed=31337)
