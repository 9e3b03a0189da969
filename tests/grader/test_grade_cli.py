"""grader/cli.py, `python -m specdec.grade`: the instructor's and the learner's command.

In process (`helpers.cli`, which calls `grader.cli.main`) and as a subprocess: the table lists failures first
and hides hidden cases' answers; --json is one document whatever the submission prints; a seed changes the
hidden cases only; every misuse is exit 2 with one clear line and no traceback; learner text that reaches
stderr (an import error with ANSI codes and a fake `score:` line) is one clean line.
"""

import json
import os
import re
import subprocess
import sys
import time
import uuid

import pytest

from grader.registry import exercise
from helpers import ROOT, SUBS, alive_with, cli

EX01 = os.path.join(SUBS, "ex01")
TOKEN = "specdec-test-" + uuid.uuid4().hex  # marks the processes the grandchild-starting submission starts
# Every test runs the command: as a subprocess, or grading a file in the sandbox (0.5 s to 6 s each): slow.
pytestmark = pytest.mark.slow


# ---- the learner's view: table and JSON ------------------------------------------------------------------------------
def test_cli_table_lists_failures_first_and_hides_hidden_answers(capsys):
    code, out, _ = cli(capsys, os.path.join(SUBS, "ex01", "wrong_bonus_without_row_k.py"), "--exercise", "ex01")
    lines = out.strip().splitlines()
    assert code == 1
    points = {c.name: c.points for c in exercise("ex01").cases(0)}
    # It loses Example 2 and "all accepted, no row K" (the independent check above proves which).
    score = 100 - points['example 2: both accepted, no row K'] - points['all accepted, no row K']
    assert lines[-1] == f"score: {score}/100"  # Example 2 is public and failed: no bonus
    rows = [line for line in lines if re.match(r"  \S", line) and "/" in line[:60]]
    assert [("FAIL" in r) for r in rows] == sorted(("FAIL" in r for r in rows), reverse=True)  # failures first
    # public Example 2: input, expected and got are shown
    assert "expected: {'accepted_tokens': [0, 1], 'bonus_token': None, 'acceptance_count': 2}" in out
    assert "got:      {'accepted_tokens': [0, 1], 'bonus_token': 1, 'acceptance_count': 2}" in out
    hidden = next(line for line in lines if line.strip().startswith("all accepted, no row K *"))
    assert "hint:" in hidden and "None" not in hidden and "expected" not in hidden
    assert "Most likely cause: a bonus token without row K" in out


def test_cli_json_is_one_document_and_a_seed_changes_the_hidden_cases(capsys, monkeypatch):
    path = os.path.join(SUBS, "ex01", "wrong_strict_less.py")
    shipped = json.loads(cli(capsys, path, "--json", "--exercise", "ex01")[1])
    monkeypatch.setenv("SPECDEC_GRADE_SEED", "31337")
    secret = json.loads(cli(capsys, path, "--json", "--exercise", "ex01")[1])
    for doc in (shipped, secret):
        assert {"exercise", "score", "max_score", "bonus", "plain_python", "bonus_decided_by", "diagnosis",
                "cases", "sandbox", "hidden_cases"} <= set(doc) and "seed" not in doc   # the secret is never shown
        assert sum(c["points"] for c in doc["cases"] if c["passed"]) == doc["score"]
        assert doc["diagnosis"].startswith("Most likely cause: the test is u < min(1, p/q)")
    assert (shipped["hidden_cases"], secret["hidden_cases"]) == ("the shipped ones", "the instructor's secret")
    assert "31337" not in json.dumps(secret)
    cases = {s: exercise("ex01").cases(s) for s in (0, 31337)}
    assert [c.calls for c in cases[0] if not c.hidden] == [c.calls for c in cases[31337] if not c.hidden]
    assert sum(a.calls != b.calls for a, b in zip(cases[0], cases[31337])) >= 15  # fresh hidden inputs


def test_cli_json_stays_one_document_whatever_the_submission_prints(tmp_path):
    for name in ("hostile_fake_score.py", "hostile_setsid_grandchild.py", "hostile_ansi_message.py"):
        path = tmp_path / name
        path.write_text(open(os.path.join(EX01, name)).read().replace("MARKER", TOKEN))
        result = subprocess.run([sys.executable, "-m", "specdec.grade", str(path), "--exercise", "ex01", "--json"],
                                capture_output=True, text=True, cwd=ROOT, timeout=120)
        doc = json.loads(result.stdout)  # exactly one document, or this raises
        assert doc["file"] == name and len(result.stderr) < 2000
    assert alive_with(TOKEN) == []


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_an_import_error_reaches_stderr_as_one_clean_line(flag):
    result = subprocess.run([sys.executable, "-m", "specdec.grade", os.path.join(EX01, "hostile_ansi_at_import.py"),
                             "--exercise", "ex01", "--sandbox", "process", *flag],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if not line.startswith("warning:")]
    assert len(errors) == 1 and errors[0].startswith("cannot grade hostile_ansi_at_import.py: RuntimeError: ")
    assert not any(ch in result.stderr + result.stdout for ch in "\x1b\x07\r")
    shown = result.stdout.splitlines()
    if flag:
        assert len(shown) == 1 and json.loads(shown[0])["score"] == 0
    else:
        assert [line for line in shown if line.startswith("score:")] == ["score: 0/100"] == shown[-1:]


# ---- misuse: exit 2, one line ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, needle", [
    (["tests/submissions/ex01/broken_syntax.py", "--exercise", "ex01"], "SyntaxError: "),
    (["tests/submissions/ex01/broken_missing_function.py", "--exercise", "ex01"], "defines no function"),
    (["tests/submissions/ex01/good_plain.py"], "cannot tell the exercise"),   # no exNN in the name
    (["tests/submissions/ex01/good_plain.py", "--exercise", "ex09"], "invalid choice: 'ex09'"),
    (["no/such/file.py", "--exercise", "ex01"], "no such file"),
    (["tests/submissions/ex01/good_plain.py", "--exercise", "ex01", "--timeout", "0"], "of seconds > 0"),
])
def test_cli_exit_2_with_a_clear_message(capsys, args, needle):
    code, _, err = cli(capsys, *[os.path.join(ROOT, a) if a.startswith("tests/") else a for a in args])
    assert code == 2 and needle in err


@pytest.mark.parametrize("args, env, needle", [
    (["x_ex01.py"], {"SPECDEC_GRADE_SEED": "abc"}, "SPECDEC_GRADE_SEED must be an integer, got 'abc'"),
    (["x_ex01.py", "--seed", "abc"], {}, "argument --seed: invalid int value: 'abc'"),
    (["x_ex01.py", "--timeout", "inf"], {}, "--timeout must be a number of seconds > 0 and finite"),
    (["x_ex01.py", "--csv", "g.csv"], {}, "--csv goes with --batch DIR"),
    (["x_ex01.py", "--jobs", "3"], {}, "--jobs goes with --batch DIR"),
    (["--batch", "TMP"], {}, "--batch needs --csv FILE"),
    (["--batch", "TMP", "--csv", "TMP/no/such/folder/g.csv"], {}, "not a file in a folder this user can write to"),
    (["--batch", "TMP", "--csv", "TMP"], {}, "not a file in a folder this user can write to"),
    (["--batch", "TMP", "--csv", "TMP/g.csv", "--jobs", "0"], {}, "--jobs must be between 1 and 64, got 0"),
    (["--batch", "TMP", "--csv", "TMP/g.csv", "--jobs", "-1"], {}, "--jobs must be between 1 and 64, got -1"),
])
def test_bad_options_are_exit_2_with_a_clear_message(tmp_path, args, env, needle):
    """Each misuse is refused before anything is graded: one line, exit 2, no traceback, no CSV."""
    (tmp_path / "a_ex01.py").write_text("def verify_speculative_tokens(*args):\n    return None\n")
    args = [a.replace("TMP", str(tmp_path)) for a in args]
    result = subprocess.run([sys.executable, "-m", "specdec.grade", *args], capture_output=True, text=True, cwd=ROOT,
                            env=dict(os.environ, **env), timeout=60)
    assert result.returncode == 2 and needle in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == "" and not os.path.exists(tmp_path / "g.csv")


def test_help_shows_examples_and_a_batch_says_what_it_could_not_grade(tmp_path):
    shown = subprocess.run([sys.executable, "-m", "specdec.grade", "--help"], capture_output=True, text=True,
                           cwd=ROOT, timeout=60)
    assert shown.returncode == 0
    assert "examples:\n  python -m specdec.grade exercises/ex01_verify/ex01_verify.py" in shown.stdout
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice_ex01.py").write_text(open(os.path.join(SUBS, "ex01", "good_plain.py")).read())
    (folder / "bob_ex01.py").write_text("def verify_speculative_tokens(:\n")  # a syntax error
    csv_path = tmp_path / "grades.csv"
    result = subprocess.run([sys.executable, "-m", "specdec.grade", "--batch", str(folder), "--csv", str(csv_path),
                             "--sandbox", "process", "--jobs", "1", "--timeout", "5"], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (f"2 rows (students x exercises): 1 graded, 1 not graded (the gradebook's "
                                     f"error column says why) -> {csv_path} (2 rows written)")
    assert len(open(csv_path).read().splitlines()) == 3  # a header and a row per file


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["gradescope", "--exercise", "ex01", "--seed", "5", "--out", "x.zip", "--timeout", "nan"],
    ["gradescope", "--exercise", "ex01", "--seed", "5", "--out", "x.zip", "--timeout", "-1"],
    ["--batch", "CLASS", "--exercise", "ex01", "--csv", "g.csv", "--feedback", "AFILE", "--sandbox", "process"],
    ["--batch", "CLASS", "--exercise", "ex01", "--csv", "g.csv", "--due", "tomorrow", "--sandbox", "process"],
    ["--batch", "CLASS", "--exercise", "ex01", "--csv", "g.csv", "--late-penalty", "150", "--sandbox", "process"],
    ["--batch", "CLASS", "--exercise", "ex01", "--csv", "g.csv", "--policy", "random"],
    ["--batch", "AFILE", "--exercise", "ex01", "--csv", "g.csv"],
    ["gradebook", "out.csv", "AFILE"],
    ["gradebook", "out.csv", "SHORT"],
    ["similar", "CLASS", "--exercise", "ex01", "--gradebook", "AFILE"],
    ["similar", "AFILE", "--exercise", "ex01"],
    ["AFILE"],
])
def test_every_argument_is_refused_before_any_grading_and_no_input_gives_a_traceback(tmp_path, argv):
    """Issue 24: `gradescope --timeout nan` was accepted, `--feedback` naming a file failed after the whole class
    was graded, and `gradebook` on a short row ended in a traceback."""
    (tmp_path / "CLASS").mkdir()
    (tmp_path / "CLASS" / "ex01_alice.py").write_text("def verify_speculative_tokens(:\n")
    (tmp_path / "AFILE").write_text("not a gradebook, not a class\n")
    (tmp_path / "SHORT").write_text("student,name,exercise\n1\n")
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "specdec.grade", *argv], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-600:]
    assert not (tmp_path / "g.csv").exists() and not (tmp_path / "x.zip").exists()   # nothing graded or written
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("module", ["specdec.grade", "grader.cli"])
def test_each_subcommand_runs_as_a_module_of_either_name(tmp_path, module):
    """`python -m grader.cli` runs the same command as `python -m specdec.grade`: every subcommand defined before
    it starts (`similar` once came after the module's main guard and ended in a NameError)."""
    for name in ("ex01_alice.py", "ex01_bob.py"):
        (tmp_path / name).write_text(open(os.path.join(EX01, "good_plain.py")).read())
    result = subprocess.run([sys.executable, "-m", module, "similar", str(tmp_path), "--exercise", "ex01"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr[-600:]
    assert "2 files of ex01 in 1 sources: 2 flagged" in result.stdout, result.stdout
