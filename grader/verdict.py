"""From the outcomes of one run to a Report: judge every case, explain failures, diagnose.

Shared by the command-line grader (sandboxed outcomes) and `check()` (outcomes
from this process). A failed public case shows its input, expected value and
what came back; a failed hidden case shows its hint, never the expected value.
A judge that crashes is the grader's bug, and the case says so plainly.

    >>> from .registry import exercise
    >>> ex = exercise("ex03")
    >>> cases = ex.cases(0)
    >>> outcomes = [{"results": [{"raised": {"type": "NotImplementedError", "message": "write it",
    ...                                      "builtin_types": ["NotImplementedError"], "line": 9, "text": "raise"}}]}
    ...             for _ in cases]
    >>> report = build(ex, 0, cases, outcomes)
    >>> report.score, report.diagnosis[:15]
    (0, 'Not written yet')
"""

import traceback

from .cases import twins
from .diagnose import diagnose, not_started, signatures
from .protocol import Foreign
from .report import CaseResult, Report


def judge_case(case, outcome):
    """(passed, message, detail lines, crash key) for one case; never raises."""
    try:
        passed, message = case.judge(outcome)
    except Exception:
        where = traceback.format_exc().strip().splitlines()[-1]
        return False, f"GRADER BUG while judging this case (not your mistake; please report it): {where}", [], "bug"
    if passed:
        return True, "", [], None
    result = outcome.get("results", [{}])[0] if "results" in outcome else {}
    crash = (result["raised"]["type"], result["raised"].get("line")) if "raised" in result else message
    if case.hidden:
        return False, message + (f" (hint: {case.hint})" if case.hint else ""), [], crash
    value = result.get("value")
    got = (str(value) if isinstance(value, Foreign) else repr(value)) if "value" in result else message
    detail = [f"input:    {case.shown_input()}", f"expected: {case.expected[:400]}", f"got:      {got[:400]}"]
    return False, message, detail, crash


def build(exercise, seed, cases, outcomes, key=None, **fields):
    """A Report for `outcomes` (one per case, in order); `fields` fill in the rest (source, bonus ...).

    `key`: what the diagnosis caches these cases' signatures under, when they are not `seed`'s own.
    """
    results, failed, bug = [], {}, False
    judged = [judge_case(case, outcome) for case, outcome in zip(cases, outcomes)]
    voided = twins(cases, outcomes, [j[0] for j in judged])
    for i, (case, (passed, message, detail, crash)) in enumerate(zip(cases, judged)):
        if i in voided:
            passed, message, crash = False, voided[i], "twin"
        bug = bug or crash == "bug"
        if case.is_twin:   # decides its case's points (above); not a row of its own
            continue
        results.append(CaseResult(case.name, case.hidden, case.points, passed, message, detail, crash))
        if not passed:
            failed[case.name] = crash
    report = Report(exercise.name, exercise.title, results, exercise.max_score, exercise.bonus, seed=seed,
                    grader_bug=bug, **fields)
    if failed and not report.error and not bug:  # a grader bug makes any diagnosis a guess
        sigs = {} if not_started(failed) and len(failed) == len(cases) else \
            signatures(exercise, seed if key is None else key, cases)
        report.diagnosis = diagnose(failed, sigs, {m.name: m.cause for m in exercise.mistakes})
    return report


def not_run(exercise, seed, cases, error, **fields):
    """The Report of a submission that could not be graded at all (every case fails, status error)."""
    results = [CaseResult(c.name, c.hidden, c.points, False, "not run: the submission could not be graded")
               for c in cases if not c.is_twin]
    return Report(exercise.name, exercise.title, results, exercise.max_score, exercise.bonus, seed=seed,
                  error=error, **fields)
