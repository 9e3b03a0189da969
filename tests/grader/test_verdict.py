"""grader/verdict.py: a case's points, and whose fault a failure is.

Raising the expected exception everywhere is no answer: every bad-input case wants a ValueError, so a bare
`raise ValueError` (or a made-up subclass of it, tests/submissions/ex02/hostile_raise_everywhere.py) once
earned 9 to 19 points. A case passed by raising earns its points exactly when the function answers the case's
twin (the same input without its fault) without raising; so validation that tells valid from invalid input
keeps its points, and one over-strict check elsewhere costs only the cases it breaks. A public example earns
its points only if its renamed twin passes (a table of the examples' answers earns nothing). A judge or worker
that crashes is reported as the grader's bug, not the learner's mistake.
"""

import os

import pytest

from grader import check, grade_file
from grader.registry import exercise
from helpers import NEEDS_BWRAP, SUBS, ex01_argument_checks

OPTIONS = {"timeout": 2.0, "max_seconds": 8.0, "mode": "bwrap", "seed": 271828}


# ---- raising the expected exception everywhere -----------------------------------------------------------------------
def _raise_everywhere(*args):
    raise ValueError("no")


def _validates_only(draft_tokens, draft_probs, target_probs, random_samples):
    """An honest learner half way: the checks written, the walk not yet (a placeholder answer)."""
    ex01_argument_checks(draft_tokens, draft_probs, target_probs, random_samples)
    return {"accepted_tokens": [], "bonus_token": -1, "acceptance_count": 0}


def _strict_sums(draft_tokens, draft_probs, target_probs, random_samples):
    """A correct verifier whose row check is over-strict (sums within 1e-15): it refuses some valid smooth rows."""
    import math
    from specdec import verify_speculative_tokens
    for name, rows in (("draft_probs", draft_probs), ("target_probs", target_probs)):
        for i, row in enumerate(rows):
            if abs(math.fsum(row) - 1) > 1e-15:
                raise ValueError(f"{name}[{i}] does not sum to 1")
    return verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ex01", "ex02", "ex03", "ex04", "ex06"])
def test_raising_valueerror_on_every_input_earns_no_validation_points(name):
    report = check(_raise_everywhere, exercise=name, quiet=True)  # it earned 9 to 19 points before
    raises = [c for c in exercise(name).cases(0) if c.expected == "raises ValueError"]
    assert raises and report.score == 0 and report.status == "failed"
    by_name = {c.name: c for c in report.cases}
    # ex01's rows that are not distributions: the message must also name the row at fault, and "no" names none
    assert all("on the same input without its fault" in by_name[c.name].message
               or "must name the row at fault" in by_name[c.name].message for c in raises)
    assert any("on the same input without its fault" in by_name[c.name].message for c in raises)


@pytest.mark.slow
def test_validation_that_discriminates_keeps_its_points():
    report = check(_validates_only, exercise="ex01", quiet=True)
    raises = {c.name: c.points for c in exercise("ex01").cases(0) if c.expected == "raises ValueError"}
    assert {c.name for c in report.cases if c.passed} == set(raises) and report.score == sum(raises.values()) > 0


@pytest.mark.slow
def test_naming_every_row_or_raising_everywhere_earns_nothing_for_ex01s_bad_rows():
    """The row cases want a ValueError whose message names the row at fault and no other: a message that names
    every row gives nothing away, and naming the right row while raising on every input earns nothing either."""
    def every_row(tokens, q, p, u):
        raise ValueError(" ".join(f"draft_probs[{i}] target_probs[{i}]" for i in range(8)))

    def right_row_always(tokens, q, p, u):
        from specdec import verify_speculative_tokens
        try:
            verify_speculative_tokens(tokens, q, p, u)
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        raise ValueError("target_probs[0] is wrong")   # valid input too: its twin raises
    rows = [c.name for c in exercise("ex01").cases(0) if c.name.startswith(("a row of", "a negative entry"))
            and not c.is_twin]
    assert len(rows) == 3
    for fn in (every_row, right_row_always):
        by_name = {c.name: c for c in check(fn, exercise="ex01", quiet=True).cases}
        assert not any(by_name[n].passed for n in rows), fn.__name__


@pytest.mark.slow
def test_an_over_strict_check_costs_only_the_cases_it_breaks():
    """The 1e-15 sum check refuses the smooth rows (random drafts, the 5000-token vocabulary) and the rows within
    the sum tolerance (the empty residual's), nothing else: its length and row checks keep their points, and no
    diagnosis blames them."""
    report = check(_strict_sums, exercise="ex01", quiet=True)
    failed = {c.name for c in report.cases if not c.passed}
    assert failed and all(n.startswith(("random draft", "5000-token", "empty residual")) for n in failed), failed
    assert all(c.passed for c in report.cases if "raises" in c.name) and 85 <= report.score < 100
    assert "do not raise ValueError" not in report.diagnosis


@pytest.mark.slow
@NEEDS_BWRAP
def test_a_made_up_subclass_of_valueerror_raised_everywhere_earns_nothing_in_the_sandbox():
    report = grade_file(os.path.join(SUBS, "ex02", "hostile_raise_everywhere.py"), "ex02",
                        **OPTIONS)
    assert (report.score, report.status) == (0, "failed")
    assert sum("on the same input without its fault" in c.message for c in report.cases) == \
        sum(c.expected == "raises ValueError" and not c.is_twin for c in exercise("ex02").cases(OPTIONS["seed"])) > 0


# ---- whose fault -----------------------------------------------------------------------------------------------------
def test_a_crashing_judge_or_worker_is_reported_as_a_grader_bug():
    from dataclasses import replace
    from grader import verdict
    ex = exercise("ex03")
    cases = list(ex.cases(0))
    cases[0] = replace(cases[0], judge=lambda outcome: 1 / 0)  # a judge with a bug
    outcomes = [{"results": [{"value": [0.0, 1.0, 0.0]}]}] + [{"worker_error": "Traceback ...\nKeyError: 'func'"}] * 2
    outcomes += [{"failure": "timed out after 1 s"}] * (len(cases) - 3)
    report = verdict.build(ex, 0, cases, outcomes)
    first, second = report.cases[0].message, report.cases[1].message
    assert first.startswith("GRADER BUG while judging this case (not your mistake") and "ZeroDivisionError" in first
    assert second.startswith("GRADER BUG, not your mistake") and "KeyError: 'func'" in second
    assert report.status == "error" and report.exit_code == 2
