"""grader/checking.py: `check(f)` in a learner's own session grades like the command line, and never crashes.

In a notebook the function under test is a global of the kernel; check() must give the same cases, score and
diagnosis as the sandboxed grader (but no bonus: that needs the sandbox), print outside Jupyter, render HTML
inside it, and report an answer it cannot judge (an int of 5000 digits once made it raise from the grader's
own code) as a failed case.
"""

import os
import re

import pytest

import specdec
from grader import check, grade_file
from helpers import MODE, SUBS, load
from specdec import theory

TIMEOUT = 5.0


@pytest.mark.slow
def test_check_grades_a_notebook_function_like_the_cli():
    namespace = {"__name__": "__main__"}  # what a Jupyter cell's globals look like
    exec(compile(open(os.path.join(SUBS, "ex01", "wrong_strict_less.py")).read(), "<ipython-input-1>", "exec"),
         namespace)
    report = check(namespace["verify_speculative_tokens"], exercise="ex01", quiet=True)
    cli = grade_file(os.path.join(SUBS, "ex01", "wrong_strict_less.py"), "ex01", timeout=TIMEOUT, mode=MODE)
    assert [c.passed for c in report.cases] == [c.passed for c in cli.cases]
    assert report.score == cli.score and report.diagnosis == cli.diagnosis
    assert report.bonus == 0 and report.plain_python is None  # the bonus needs the sandbox


@pytest.mark.slow
def test_check_prints_outside_jupyter_and_renders_html(capsys):
    report = check(specdec.verify_speculative_tokens)  # exercise found from the function's name
    assert capsys.readouterr().out.strip().splitlines()[-1] == "score: 100/100"
    assert (report.score, report.exit_code) == (100, 0)
    wrong = check(load(os.path.join(SUBS, "ex01", "wrong_tie_high.py")).verify_speculative_tokens,
                  exercise="ex01", quiet=True)
    html = wrong._repr_html_()
    assert html.count("<tr") == len(wrong.cases) + 1 and "Most likely cause: argmax ties" in html
    fail_rows = [m.start() for m in re.finditer("<tr class='failed' style='background:", html)]
    pass_rows = [m.start() for m in re.finditer("<tr class='passed'>", html)]
    assert len(fail_rows) == 2 and max(fail_rows) < min(pass_rows)  # failures first, shaded
    assert repr(wrong) == wrong.table()


def test_check_ex05_takes_both_functions():
    assert check(theory.acceptance_rate, theory.expected_tokens_per_step, exercise="ex05", quiet=True).score == 100
    namespace = {}
    exec("def acceptance_rate(p, q):\n    return sum(min(a, b) for a, b in zip(p, q))", namespace)
    with pytest.raises(ValueError, match="missing expected_tokens_per_step"):
        check(namespace["acceptance_rate"], exercise="ex05", quiet=True)


@pytest.mark.slow
@pytest.mark.parametrize("digits", [400, 5000])
def test_check_reports_a_huge_int_instead_of_crashing(digits):
    """In a learner's own session too: 10**5000 made check() raise ValueError from the grader's code."""
    big = 10 ** digits

    def softmax(logits, temperature=1.0):
        return [big for _ in logits]
    report = check(softmax, exercise="ex02", quiet=True)
    said = f"an int with {digits + 1} digits" if digits < 3913 else "an int with more than 3913 digits"
    assert report.score == 0 and said in report.cases[0].message
