"""The catalogue of mistakes (each exercise's `MISTAKES`), and its learner files graded in the sandbox.

Independent reference for the wrong submissions: each one is also run IN THIS PROCESS on every case's inputs
and compared with the course's reference functions directly (no sandbox, no protocol, no judge); the cases it
should lose come from that, and the sandboxed grader must report exactly those, with exactly that score, and
the diagnosis named by the file (tests/submissions/exNN/wrong_<mistake>.py). Each exercise's folder of
submissions is graded once (the `graded` fixture) and asserted on many times.
"""

import copy
import glob
import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

import specdec
from grader import grade_file, replay
from grader.diagnose import signatures
from grader.registry import EXERCISES, exercise
from helpers import MODE, SUBS, load
from specdec import theory

TIMEOUT = 5.0


REFERENCE = {"verify_speculative_tokens": specdec.verify_speculative_tokens, "softmax": specdec.softmax,
             "residual_distribution": specdec.residual_distribution,
             "acceptance_rate": theory.acceptance_rate, "expected_tokens_per_step": theory.expected_tokens_per_step}


def same(a, b, tol):
    """Equal values of equal types, floats within `tol` (a second, independent comparison)."""
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return abs(a - b) <= tol
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tol) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b))
    return a == b


def expected_failures(module, ex, seed=0):
    """Names of the cases the module gets wrong, judged here against the course's reference functions.

    With the twin rules written out again: a case passed by raising counts only if the module answers its
    twin (the same input without the fault) without raising; an example counts only if its renamed twin passes.
    """
    outcome = {}                                   # case name -> (right, raised)
    for case in ex.cases(seed):
        args = [tuple(a["$tuple"]) if isinstance(a, dict) else a for a in case.calls[0]["args"]]
        try:
            want, want_error = REFERENCE[case.func](*copy.deepcopy(args)), None
        except (ValueError, TypeError) as exc:
            want, want_error = None, type(exc)
        mine, raised = copy.deepcopy(args), False
        try:
            got = getattr(module, case.func)(*mine)
            ok = want_error is None and same(want, got, 1e-9)
        except Exception as exc:
            ok, raised = want_error is not None and isinstance(exc, want_error), True
        outcome[case.name] = (ok and mine == args, raised)
    failed = []
    for case in ex.cases(seed):
        ok, raised = outcome[case.name]
        if case.is_twin:
            continue
        if ok and case.twin:
            twin_ok, twin_raised = outcome[case.twin]
            ok = not twin_raised if raised else twin_ok
        if not ok:
            failed.append(case.name)
    return failed


@pytest.fixture(scope="module")
def graded():
    """{exNN: {file name: Report}}: tests/submissions/exNN's wrong_*, good_* and numpy_* files, graded once.

    Each in its sandbox(es), three files at a time, by this process (the batch command's own path, a grading
    process per file, is graded in tests/grader/test_hostile_class.py).
    """
    files = [(name, path) for name in sorted(EXERCISES) for pattern in ("wrong_*.py", "good_*.py", "numpy_*.py")
             for path in sorted(glob.glob(os.path.join(SUBS, name, pattern)))]
    with ThreadPoolExecutor(max_workers=3) as pool:
        reports = [(name, pool.submit(grade_file, path, name, timeout=TIMEOUT, mode=MODE)) for name, path in files]
    out = {name: {} for name in EXERCISES}
    for name, future in reports:
        out[name][future.result().source] = future.result()
    return out


def wrong_files(*exercises):
    return [(e, os.path.basename(p)) for e in exercises for p in sorted(glob.glob(os.path.join(SUBS, e, "wrong_*.py")))]


# ---- the catalogue of mistakes: every file its own, correct diagnosis ------------------------------------------------
DETERMINISTIC = sorted(n for n, e in EXERCISES.items() if set(e.functions) <= set(REFERENCE))  # not samplers


SAMPLERS = sorted(set(EXERCISES) - set(DETERMINISTIC))


@pytest.mark.slow
@pytest.mark.parametrize("name, file", wrong_files(*sorted(EXERCISES)))
def test_each_catalogued_mistake_gets_its_own_diagnosis(graded, name, file):
    mistake = re.sub(r"_numpy$", "", file[len("wrong_"):-3])  # wrong_module_random_numpy: the same mistake
    causes = {m.name: m.cause for m in exercise(name).mistakes}
    report = graded[name][file]
    assert report.error == "" and report.score < 100
    assert report.diagnosis == f"Most likely cause: {causes[mistake]}."


@pytest.mark.slow
@pytest.mark.parametrize("name, file", wrong_files(*DETERMINISTIC))
def test_wrong_submission_loses_exactly_its_cases(graded, name, file):
    ex = exercise(name)
    failed = expected_failures(load(os.path.join(SUBS, name, file)), ex)
    assert failed, "the file must get something wrong, or the test is vacuous"
    report = graded[name][file]
    assert sorted(c.name for c in report.cases if not c.passed) == sorted(failed)
    points = {c.name: c.points for c in ex.cases(0)}
    assert report.score == 100 - sum(points[n] for n in failed)
    assert report.plain_python is True and report.bonus == 0 and report.exit_code == 1   # the bonus: every case


def test_every_catalogued_mistake_has_a_learner_file():
    for name, ex in EXERCISES.items():
        files = {f[len("wrong_"):-3] for _, f in wrong_files(name)}
        assert {m.name for m in ex.mistakes} <= files, name


@pytest.mark.slow
def test_every_mistake_has_a_distinct_signature_whatever_the_seed():
    for name, ex in EXERCISES.items():
        for seed in ((0,) if name in SAMPLERS else (0, 7, 2024)):  # a sampler's statistics cost a second per seed
            sigs = signatures(ex, seed, ex.cases(seed))
            assert all(sigs.values()), (name, seed, [m for m, s in sigs.items() if not s])
            assert len(set(sigs.values())) == len(sigs), (name, seed)


# ---- honest files and NumPy ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_good_files_in_the_catalogue_pass_independently(graded):
    good = load(os.path.join(SUBS, "ex01", "good_plain.py"))
    assert expected_failures(good, exercise("ex01")) == []
    assert expected_failures(good, exercise("ex01"), seed=99) == []
    report = graded["ex01"]["good_plain.py"]
    assert (report.score, report.bonus, report.diagnosis, report.exit_code) == (100, 10, "", 0)


@pytest.mark.slow
@pytest.mark.parametrize("name, file", [("ex04", "good_choices.py"), ("ex06", "good_lazy_order.py")])
def test_samplers_that_draw_in_another_order_pass_their_statistics_and_replays(graded, name, file):
    report = graded[name][file]  # each draws only from rng, in an order of its own; some calls replayed elsewhere
    assert (report.score, report.diagnosis, report.exit_code) == (100, "", 0), [
        (c.name, c.message) for c in report.cases if not c.passed]


@pytest.mark.slow
def test_numpy_is_allowed_but_earns_no_bonus(graded):
    report = graded["ex01"]["numpy_correct.py"]
    assert (report.score, report.plain_python, report.bonus, report.exit_code) == (100, False, 0, 0)
    assert "asked for NumPy" in report.bonus_note and "graded again with NumPy available" in report.bonus_note


@pytest.mark.slow
def test_a_sampler_on_numpys_global_generator_is_caught_and_graded_deterministically(graded):
    first = graded["ex04"]["wrong_module_random_numpy.py"]
    again = grade_file(os.path.join(SUBS, "ex04", "wrong_module_random_numpy.py"), "ex04", TIMEOUT, mode=MODE)
    statistical = [c.name for c in exercise("ex04").cases(0)  # their calls, replayed, give other outputs
                   if c.replay and c.name != "same seed, same result"]  # (replayed too: a pair case)
    failed = {c.name: c.message for c in first.cases if not c.passed}
    assert list(failed) == ["same seed, same result"] + statistical and len(statistical) == 5
    assert all(failed[n].startswith(replay.MESSAGE + " (hint: ") for n in statistical)
    assert [(c.name, c.passed, c.message) for c in again.cases] == [(c.name, c.passed, c.message) for c in first.cases]
    assert first.plain_python is False and first.bonus == 0
