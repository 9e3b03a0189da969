"""The grader on hostile and broken submissions: never hangs, crashes or misreports.

Most hostile fixtures (tests/submissions/hostile_*_k0.py) are a correct
solution that misbehaves only when K == 0, so the honest score is known
independently: 100 minus the points of the cases whose draft is empty
(read from the cases' inputs, not from the grader's output).
Time limits are short here (--timeout 2) to keep the file fast.
"""

import json
import os
import subprocess
import sys

import pytest

from specdec.grading import grade_file
from specdec.grading.cases import exercise

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions")
TIMEOUT = 2.0
CASES = exercise("ex01").cases
K0 = [c.name for c in CASES if c.args[0] == []]               # the cases with an empty draft
RAISES = [c.name for c in CASES if c.raises]


def grade(name):
    return grade_file(os.path.join(SUBS, name), "ex01", timeout=TIMEOUT)


def failed(report):
    return {c.name: c.message for c in report.cases if not c.passed}


def test_k0_cases_exist_and_are_hidden():
    assert K0 == ["K = 0 with a bonus row", "K = 0, no rows"]
    assert all(c.hidden for c in CASES if c.name in K0)


@pytest.mark.parametrize("name, reason", [
    ("hostile_loop_k0.py", "timed out after 2 s"),                      # an infinite loop costs one case each
    ("hostile_sys_exit_k0.py", "called sys.exit(3)"),                   # SystemExit is caught like any error
    ("hostile_os_exit_k0.py", "the process exited with code 0"),        # the process dies; a fresh one goes on
    ("hostile_memory_k0.py", "raised MemoryError"),                     # 40 GiB against the 2 GiB limit
    ("hostile_channel_k0.py", "wrote to the grader's result channel"),  # fake result lines on every fd
])
def test_misbehaving_case_costs_only_that_case(name, reason):
    report = grade(name)
    points = {c.name: c.points for c in CASES}
    assert report.error == ""
    assert sorted(failed(report)) == sorted(K0)
    assert all(reason in m for m in failed(report).values())
    assert report.score == 100 - sum(points[n] for n in K0) == 94
    assert report.plain_python is True and report.bonus == 10


def test_warnings_cost_nothing():
    report = grade("hostile_warns.py")
    assert (report.score, report.bonus, report.exit_code) == (100, 10, 0)


def test_numpy_imported_lazily_under_another_name_loses_the_bonus():
    report = grade("hostile_numpy_lazy_k0.py")  # the source never spells "import numpy"
    assert (report.score, report.plain_python, report.bonus) == (100, False, 0)


def test_numpy_hidden_from_sys_modules_still_loses_the_bonus():
    # The import hook is removed and numpy deleted from sys.modules; the parent still sees NumPy's
    # compiled core in the child's memory map (/proc/PID/maps: extension modules are never unloaded).
    report = grade("hostile_hide_numpy.py")
    assert (report.score, report.plain_python, report.bonus) == (100, False, 0)


def test_always_equal_objects_earn_nothing():
    for name in ("hostile_always_equal.py", "hostile_always_equal_values.py"):
        report = grade(name)
        assert report.score == 0 and report.error == ""
        assert report.bonus == 0  # a score of 0 earns no bonus, plain Python or not


def test_wrong_types_earn_only_cases_without_tokens():
    report = grade("hostile_wrong_types.py")
    # Token ids as floats: only the cases that must raise, and the one whose answer has no token, pass.
    assert sorted(n for n in (c.name for c in report.cases) if n not in failed(report)) == \
        sorted(RAISES + ["K = 0, no rows"])
    assert "accepted_tokens[0] is a float (2.0): token ids must be ints" in failed(report)["seed 1: all accepted, bonus"]


def test_mutating_the_inputs_fails_the_case():
    report = grade("hostile_mutates.py")
    # It changes draft_probs[0][0] once past validation: every case with a draft row fails.
    assert sorted(failed(report)) == sorted(c.name for c in CASES if c.args[1] and not c.raises)
    assert set(failed(report).values()) == {"mutated draft_probs"}


def test_looping_on_every_call_stops_after_three_timeouts():
    report = grade("hostile_loop_always.py")
    messages = [c.message for c in report.cases]
    assert messages[:3] == ["timed out after 2 s"] * 3
    assert all(m == "not run: 3 cases already timed out" for m in messages[3:])
    assert report.score == 0 and report.exit_code == 1


@pytest.mark.parametrize("name, needle", [
    ("hostile_import_loop.py", "timed out after 5 s while loading"),
    ("hostile_import_sys_exit.py", "called sys.exit(0) while loading"),
    ("hostile_import_os_exit.py", "exited with code 0 while loading"),
    ("hostile_import_specdec.py", "the grader blocks `import specdec`"),
    ("hostile_unhook_specdec.py", "No module named 'specdec'"),         # removing the hook is not enough
    ("broken_raises_at_import.py", "RuntimeError: boom at import"),
])
def test_dying_at_import_cannot_be_graded(name, needle):
    report = grade(name)
    assert needle in report.error
    assert (report.score, report.bonus, report.exit_code) == (0, 0, 2)
    assert all(not c.passed for c in report.cases)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "specdec.grade", *args], capture_output=True, cwd=ROOT,
                          timeout=120)


def test_megabytes_of_prints_never_reach_the_output():
    result = run_cli(os.path.join(SUBS, "hostile_print_flood.py"), "--exercise", "ex01", "--json")
    assert len(result.stdout) < 10_000 and len(result.stderr) < 10_000  # it printed ~20 MB
    doc = json.loads(result.stdout)
    assert (doc["score"], doc["bonus"], result.returncode) == (100, 10, 0)


def test_a_fake_score_line_is_not_the_last_line():
    result = run_cli(os.path.join(SUBS, "hostile_fake_score.py"), "--exercise", "ex01", "--timeout", "2")
    lines = result.stdout.decode().strip().splitlines()
    # It always answers {[], None, 0}: right only for "K = 0, no rows" (3 points); plain Python, score > 0.
    assert lines[-1] == "score: 3/100 (+10 bonus)"
    assert sum(l.startswith("score:") for l in lines) == 1
    doc = json.loads(run_cli(os.path.join(SUBS, "hostile_fake_score.py"), "--exercise", "ex01", "--json").stdout)
    assert doc["score"] == 3


def test_a_hanging_submission_in_a_batch_costs_nobody_else(tmp_path):
    for name in ("hostile_loop_always.py", "hostile_import_loop.py", "good_plain.py"):
        (tmp_path / name).write_text(open(os.path.join(SUBS, name)).read())
    out = tmp_path / "g.csv"
    result = run_cli("--batch", str(tmp_path), "--exercise", "ex01", "--csv", str(out), "--timeout", "2")
    assert result.returncode == 0
    rows = {line.split(",")[0]: line.split(",")[1:6] for line in out.read_text().splitlines()[1:]}
    assert rows["good_plain.py"] == ["100", "100", "10", "1", "passed"]
    assert rows["hostile_loop_always.py"][:1] == ["0"] and rows["hostile_loop_always.py"][4] == "failed"
    assert rows["hostile_import_loop.py"][4] == "error"
