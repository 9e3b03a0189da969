"""What the statements decide is what is graded, for the points they state.

Independent references: each statement's table of hidden cases (README.md, parsed here) against the kinds the
grader draws; and fixture files (tests/submissions/exNN/wrong_*.py), each making ONE wrong decision, which must
lose exactly the cases the statement names for that decision and exactly their stated points, in this process
(`check`; the sandboxed grader's verdicts on the same files: tests/exercises/test_catalogue.py).
"""

import os
import re

import pytest

from grader import check
from grader.registry import exercise
from helpers import ROOT, SUBS, load

FOLDERS = {"ex01": "ex01_verify", "ex02": "ex02_softmax", "ex04": "ex04_sampler"}


def stated_points(name):
    """{hidden case: points} from the statement's table whose header starts with `| hidden case`."""
    text = open(os.path.join(ROOT, "exercises", FOLDERS[name], "README.md"), encoding="utf-8").read()
    table = re.search(r"^ *\| hidden case \|.*\n *\|[- |]+\|\n((?: *\|.*\|\n)+)", text, flags=re.M)
    assert table, f"{name}: no table of hidden cases in its statement"
    out = {}
    for row in table.group(1).splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        case_name = re.sub(r" \(.*$", "", cells[0])   # a note in parentheses after the name
        assert case_name not in out, case_name
        out[case_name] = int(cells[-1])
    return out


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_each_statement_states_every_hidden_case_with_its_points(name):
    ex = exercise(name)
    assert stated_points(name) == {k.name: k.points for k in ex.kinds}
    assert sum(stated_points(name).values()) + sum(c.points for c in ex.public) == ex.max_score == 100


WRONG_DECISIONS = [   # (exercise, fixture, the hidden cases the statement names for the decision it gets wrong)
    ("ex01", "wrong_no_empty_fallback.py", {"empty residual falls back to p"}),
    ("ex01", "wrong_no_zero_q_check.py", {"q(x) = 0 raises"}),
    ("ex01", "wrong_no_row_check.py", {"a row of logits raises", "a row of weights raises", "a negative entry raises"}),
    ("ex01", "wrong_row_sum_only.py", {"a negative entry raises"}),
    ("ex01", "wrong_row_signs_only.py", {"a row of weights raises"}),
    ("ex02", "wrong_infinite_temperature.py", {"infinite temperature raises"}),
]


@pytest.mark.slow   # the first check of an exercise in a process draws its cases and the catalogue's signatures
@pytest.mark.parametrize("name, file, lost", WRONG_DECISIONS)
@pytest.mark.parametrize("seed", [0, 31337])
def test_each_wrong_decision_loses_exactly_its_stated_points(name, file, lost, seed):
    module = load(os.path.join(SUBS, name, file))
    report = check(getattr(module, exercise(name).functions[0]), exercise=name, quiet=True, seed=seed)
    assert {c.name for c in report.cases if not c.passed} == lost
    assert report.score == 100 - sum(stated_points(name)[n] for n in lost)
    cause = {m.name: m.cause for m in exercise(name).mistakes}[file[len("wrong_"):-3]]
    assert report.diagnosis == f"Most likely cause: {cause}."


@pytest.mark.slow
def test_the_course_solution_keeps_full_marks_under_the_new_decisions():
    from exercises.ex01_verify.solution import verify_speculative_tokens
    from exercises.ex02_softmax.solution import softmax
    for seed in (0, 5, 271828):
        assert check(verify_speculative_tokens, exercise="ex01", quiet=True, seed=seed).score == 100
        assert check(softmax, exercise="ex02", quiet=True, seed=seed).score == 100


@pytest.mark.slow
def test_a_row_error_must_name_the_row_at_fault():
    """The statement: `ValueError` naming the row, as draft_probs[i] or target_probs[i], and no other row."""
    from specdec import verify_speculative_tokens

    def unnamed(*args):
        try:
            return verify_speculative_tokens(*args)
        except ValueError as exc:
            if "sums to" in str(exc) or "negative" in str(exc):
                raise ValueError("a row is not a distribution") from None
            raise
    report = check(unnamed, exercise="ex01", quiet=True)
    lost = {c.name: c.message for c in report.cases if not c.passed}
    assert set(lost) == {"a row of logits raises", "a row of weights raises", "a negative entry raises"}
    assert all("must name the row at fault" in m for m in lost.values())


@pytest.mark.slow
def test_an_empty_residuals_case_sets_every_other_fallback_apart():
    """p <= q everywhere at the rejection; argmax p differs from argmax q, from token 0 (a uniform row's argmax,
    or the argmax of the all-zero residual): only the stated fallback, p, gives the expected bonus."""
    from specdec import verify_speculative_tokens
    for seed in range(5):
        case = next(c for c in exercise("ex01").cases(seed) if c.name == "empty residual falls back to p")
        tokens, q, p, u = case.calls[0]["args"]
        out = verify_speculative_tokens(tokens, q, p, u)
        i = out["acceptance_count"]
        assert all(a <= b for a, b in zip(p[i], q[i])) and u[i] > p[i][tokens[i]] / q[i][tokens[i]]
        top = lambda row: max(range(len(row)), key=lambda j: (row[j], -j))
        assert out["bonus_token"] == top(p[i]) not in (top(q[i]), 0)


@pytest.mark.slow
def test_reusing_the_acceptance_uniform_is_named_and_not_called_the_argmax_mistake():
    """The learner's real mistake (it got 90 and a diagnosis about argmaxes): the statement warns against it, the
    catalogue names it; it loses the two cases whose rows it cannot pass, for their stated points."""
    module = load(os.path.join(SUBS, "ex04", "wrong_reused_uniform.py"))
    report = check(module.speculative_sample, exercise="ex04", quiet=True)
    causes = {m.name: m.cause for m in exercise("ex04").mistakes}
    lost = {c.name for c in report.cases if not c.passed}
    assert lost == {"first token ~ p", "steps after the first: joint law"}
    assert report.score == 100 - sum(stated_points("ex04")[n] for n in lost) == 85
    assert report.diagnosis == f"Most likely cause: {causes['reused_uniform']}."
    assert causes["argmax_not_sampled"] not in report.diagnosis and "argmax" not in report.diagnosis
    statement = open(os.path.join(ROOT, "exercises", "ex04_sampler", "README.md"), encoding="utf-8").read()
    assert "Draw a fresh uniform for the correction" in statement
