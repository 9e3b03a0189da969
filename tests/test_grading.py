"""The grader on honest submissions: reference solutions, stubs, plausible wrong answers, the CLI.

Independent check for the wrong submissions: each one is also run IN THIS
PROCESS on every case's inputs and compared with the reference directly
(no child process, no JSON, no judge); the points it should lose are summed
from that, and the grader must report exactly that score.
"""

import copy
import csv
import glob
import importlib.util
import json
import os
import re
import subprocess
import sys

import nbformat
import pytest

import specdec
from specdec.grading import check, grade_file
from specdec.grading.cases import exercise
from specdec.grading.child import to_plain
from specdec.grading.judge import judge_verify
from specdec.grading.stubs import generate, make_stub
from specdec.grading.submission import infer_exercise, notebook_to_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions")
SOLUTIONS = sorted(glob.glob(os.path.join(ROOT, "exercises", "ex[0-9][0-9]_*", "solution.py")))
TIMEOUT = 5.0


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def grade_cli(*args):
    return subprocess.run([sys.executable, "-m", "specdec.grade", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def strict_equal(a, b):
    """Equal values of exactly equal types, recursively (a second, independent strict comparison)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    return a == b


def expected_failures(fn):
    """Names of the ex01 cases `fn` gets wrong, judged in-process against the reference."""
    failed = []
    for case in exercise("ex01").cases:
        args = copy.deepcopy(list(case.args))
        try:
            got = fn(*args)
            ok = not case.raises and strict_equal(got, specdec.verify_speculative_tokens(*case.args))
        except ValueError:
            ok = case.raises == "ValueError"
        ok = ok and args == list(case.args)  # inputs unchanged
        if not ok:
            failed.append(case.name)
    return failed


# ---- reference solutions and stubs ---------------------------------------------------------------
@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_reference_solution_scores_full_marks(solution):
    name = os.path.basename(os.path.dirname(solution))[:4]
    report = grade_file(solution, name, timeout=TIMEOUT)
    assert report.error == ""
    assert [c.name for c in report.cases if not c.passed] == []
    assert report.score == report.max_score == 100
    assert report.exit_code == 0
    assert report.plain_python is True  # every reference solution is plain Python
    assert report.bonus == (10 if name == "ex01" else 0)


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_stub_scores_zero_cleanly(solution):
    folder = os.path.dirname(solution)
    stub = os.path.join(folder, os.path.basename(folder) + ".py")
    report = grade_file(stub, timeout=TIMEOUT)  # exercise inferred from the file name
    assert report.error == "" and report.score == 0 and report.bonus == 0  # no bonus for a score of 0
    assert report.exit_code == 1
    assert all("NotImplementedError" in c.message for c in report.cases)


def test_committed_stubs_and_notebooks_are_up_to_date():
    assert generate(check_only=True) == []


def test_make_stub_replaces_function_blocks_and_drops_module_blocks():
    source = ('"""Doc."""\n\n### BEGIN SOLUTION\nimport math\n### END SOLUTION\n\n\n'
              'def f(x):\n    """Say f."""\n    ### BEGIN SOLUTION\n    return math.sqrt(x)\n    ### END SOLUTION\n')
    assert make_stub(source) == ('"""Doc."""\n\n\ndef f(x):\n    """Say f."""\n'
                                 '    raise NotImplementedError("write f")\n')
    with pytest.raises(ValueError, match="never closed"):
        make_stub("def f():\n    ### BEGIN SOLUTION\n    pass\n")


def test_ex01_stub_keeps_the_seed_template_verbatim():
    stub = open(os.path.join(ROOT, "exercises", "ex01_verify", "ex01_verify.py")).read()
    template = '''def verify_speculative_tokens(draft_tokens: list[int], draft_probs: list[list[float]],
                              target_probs: list[list[float]], random_samples: list[float]) -> dict:
    """Verify draft tokens via speculative decoding rejection sampling.
    Args:
        draft_tokens: Sequence of K tokens proposed by draft model.
        draft_probs: Draft model probabilities for each proposed step.
        target_probs: Target model probabilities for each step (length >= K).
        random_samples: Uniform random samples in [0, 1) for acceptance test.
    Returns:
        dict with 'accepted_tokens', 'bonus_token', and 'acceptance_count'.
    """
'''
    assert template in stub


# ---- plausible wrong submissions lose exactly the cases they get wrong ---------------------------
WRONG = {  # file -> a case its rule must get wrong (so the test cannot pass vacuously)
    "wrong_strict_less.py": "u == p/q is accepted",
    "wrong_tie_break.py": "residual tie -> lower index",
    "wrong_no_stop.py": "stop at the first rejection",
    "wrong_bonus_without_row_k.py": "all accepted, no row K",
    "wrong_target_argmax.py": "correction: residual, not target",
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_submission_loses_exactly_its_cases(name):
    path = os.path.join(SUBS, name)
    failed = expected_failures(load(path).verify_speculative_tokens)
    assert WRONG[name] in failed
    points = {c.name: c.points for c in exercise("ex01").cases}
    report = grade_file(path, "ex01", timeout=TIMEOUT)
    assert sorted(c.name for c in report.cases if not c.passed) == sorted(failed)
    assert report.score == 100 - sum(points[n] for n in failed)
    assert report.plain_python is True and report.bonus == 10 and report.exit_code == 1


def test_numpy_submission_gets_full_marks_but_no_bonus():
    report = grade_file(os.path.join(SUBS, "numpy_correct.py"), "ex01", timeout=TIMEOUT)
    assert (report.score, report.plain_python, report.bonus, report.exit_code) == (100, False, 0, 0)


def test_good_plain_fixture_agrees_with_the_reference_in_process():
    assert expected_failures(load(os.path.join(SUBS, "good_plain.py")).verify_speculative_tokens) == []


# ---- strict types ----------------------------------------------------------------------------------
def test_to_plain_keeps_types_apart():
    np = pytest.importorskip("numpy")
    assert to_plain([np.int64(3), 2.0, True, (1,), np.array([0.5])]) == [3, 2.0, True, [1], [0.5]]
    assert [type(v) for v in to_plain([np.int64(3), 2.0, True])] == [int, float, bool]
    assert to_plain(object()) == {"$object": "object"}


@pytest.mark.parametrize("got, message", [
    ({"accepted_tokens": [2.0], "bonus_token": 0, "acceptance_count": 1}, "accepted_tokens[0] is a float (2.0)"),
    ({"accepted_tokens": [2], "bonus_token": True, "acceptance_count": 1}, "bonus_token is a bool"),  # bool is not int
    ({"accepted_tokens": [2], "bonus_token": 0, "acceptance_count": 1.0}, "acceptance_count is a float"),
    ({"accepted_tokens": [2], "bonus_token": 0}, "no key 'acceptance_count'"),
    ({"$object": "AlwaysEqual"}, "an object of type AlwaysEqual"),
    ({"accepted_tokens": [2], "bonus_token": 0, "acceptance_count": 2}, "acceptance_count is not len"),
])
def test_judge_verify_rejects_wrong_types(got, message):
    passed, text = judge_verify({"accepted_tokens": [2], "bonus_token": 0, "acceptance_count": 1}, got)
    assert not passed and message in text


# ---- the command line --------------------------------------------------------------------------------
def test_cli_table_shows_public_details_and_hides_hidden_answers():
    result = grade_cli(os.path.join(SUBS, "wrong_bonus_without_row_k.py"), "--exercise", "ex01", "--timeout", "5")
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 1
    assert lines[-1] == "score: 83/100 (+10 bonus)"  # loses seed 2 (10), u == p/q at step 1 (3), no row K (4)
    text = result.stdout
    # public case seed 2: input, expected and got are shown
    assert "expected: {'accepted_tokens': [0, 1], 'bonus_token': None, 'acceptance_count': 2}" in text
    assert "got:      {'accepted_tokens': [0, 1], 'bonus_token': 1, 'acceptance_count': 2}" in text
    # hidden case: a hint, never the expected value
    hidden = next(l for l in lines if l.strip().startswith("all accepted, no row K *"))
    assert "hint:" in hidden and "None" not in hidden and "expected" not in hidden


def test_cli_json_is_one_document_with_the_stated_keys():
    result = grade_cli(os.path.join(SUBS, "wrong_strict_less.py"), "--json", "--exercise", "ex01")
    doc = json.loads(result.stdout)
    assert {"exercise", "score", "max_score", "bonus", "plain_python", "cases"} <= set(doc)
    assert (doc["exercise"], doc["score"], doc["max_score"], doc["bonus"], doc["plain_python"]) == \
        ("ex01", 90, 100, 10, True)  # loses the two u == p/q cases (5 + 3) and u = 0 (2)
    assert set(doc["cases"][0]) == {"name", "hidden", "points", "passed", "message"}
    assert sum(c["points"] for c in doc["cases"] if c["passed"]) == 90
    assert result.returncode == 1


def test_cli_score_line_has_no_bonus_part_without_bonus():
    result = grade_cli(os.path.join(SUBS, "numpy_correct.py"), "--exercise", "ex01")
    assert result.stdout.strip().splitlines()[-1] == "score: 100/100" and result.returncode == 0


@pytest.mark.parametrize("args, needle", [
    (["tests/submissions/broken_syntax.py", "--exercise", "ex01"], "SyntaxError (line 3)"),
    (["tests/submissions/broken_missing_function.py", "--exercise", "ex01"], "defines no function"),
    (["tests/submissions/good_plain.py"], "cannot tell the exercise"),   # no exNN in the name
    (["tests/submissions/good_plain.py", "--exercise", "ex09"], "unknown exercise"),
    (["no/such/file.py", "--exercise", "ex01"], "no such file"),
])
def test_cli_exit_2_with_a_clear_message(args, needle):
    result = grade_cli(*args)
    assert result.returncode == 2 and needle in result.stderr


def test_infer_exercise_from_file_name():
    assert [infer_exercise(n) for n in ("ex01_verify.py", "ex04-bob.ipynb", "alice_ex03.py", "nothing.py",
                                        "ex011.py")] == ["ex01", "ex04", "ex03", None, None]


# ---- notebooks -----------------------------------------------------------------------------------------
def _notebook(path, code):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# my work"), nbformat.v4.new_code_cell("%load_ext autoreload\n" + code),
                nbformat.v4.new_code_cell('from specdec.grading import check\ncheck(verify_speculative_tokens, exercise="ex01")')]
    nbformat.write(nb, path)


def test_notebook_submission_is_graded_without_its_check_cell_and_magics(tmp_path):
    path = str(tmp_path / "ex01_alice.ipynb")
    _notebook(path, open(os.path.join(SUBS, "good_plain.py")).read())
    report = grade_file(path, timeout=TIMEOUT)
    assert (report.error, report.score, report.bonus) == ("", 100, 10)
    script = notebook_to_script(nbformat.read(path, as_version=4))
    assert "%load_ext" not in script and "specdec.grading" not in script


def test_generated_exercise_notebook_grades_as_the_stub():
    report = grade_file(os.path.join(ROOT, "exercises", "ex01_verify", "ex01_verify.ipynb"), timeout=TIMEOUT)
    assert (report.error, report.score, report.exit_code) == ("", 0, 1)


# ---- check() in a notebook -------------------------------------------------------------------------------
def test_check_grades_the_reference_in_process(capsys):
    report = check(specdec.verify_speculative_tokens)  # exercise found from the function's name
    assert report.score == 100 and report.exit_code == 0
    assert report.bonus == 0 and report.plain_python is None  # the bonus needs the isolated grader
    assert capsys.readouterr().out.strip().splitlines()[-1] == "score: 100/100"


def test_check_works_on_a_function_defined_in_a_notebook_cell():
    namespace = {"__name__": "__main__"}  # what a Jupyter cell's globals look like
    exec(compile(open(os.path.join(SUBS, "wrong_strict_less.py")).read(), "<ipython-input-1>", "exec"), namespace)
    report = check(namespace["verify_speculative_tokens"], exercise="ex01", quiet=True)
    cli = grade_file(os.path.join(SUBS, "wrong_strict_less.py"), "ex01", timeout=TIMEOUT)
    assert [c.passed for c in report.cases] == [c.passed for c in cli.cases]
    assert report.score == cli.score == 90


def test_check_ex05_takes_both_functions():
    from specdec.theory import acceptance_rate, expected_tokens_per_step
    assert check(acceptance_rate, expected_tokens_per_step, exercise="ex05", quiet=True).score == 100
    # One function is enough when its sibling lives where it was defined (a notebook's namespace).
    assert check(acceptance_rate, exercise="ex05", quiet=True).score == 100
    namespace = {}
    exec("def acceptance_rate(p, q):\n    return sum(min(a, b) for a, b in zip(p, q))", namespace)
    with pytest.raises(ValueError, match="missing expected_tokens_per_step"):
        check(namespace["acceptance_rate"], exercise="ex05", quiet=True)


# ---- ex02-ex05: wrong answers fail the cases that target them ------------------------------------
def test_naive_softmax_fails_exactly_the_overflow_and_underflow_cases():
    from specdec.logits import naive_softmax

    def softmax(logits, temperature=1.0):  # right (and validating) until exp() leaves the float range
        right = specdec.softmax(logits, temperature)
        return right if max(abs(v) for v in logits if abs(v) != float("inf")) < 700 else naive_softmax(logits)
    report = check(softmax, exercise="ex02", quiet=True)
    assert sorted(c.name for c in report.cases if not c.passed) == \
        ["[1000, 999]", "huge logits", "very negative logits"]


def _argmax_sampler(draft_tokens, draft_probs, target_probs, rng):
    """Wrong for ex04: right acceptance, but the correction is the residual's argmax (exercise 1's rule)."""
    out = specdec.speculative_sample(draft_tokens, draft_probs, target_probs, rng)
    if out["acceptance_count"] < len(draft_tokens):
        i = out["acceptance_count"]
        out["bonus_token"] = specdec.argmax(specdec.residual_distribution(target_probs[i], draft_probs[i]))
    return out


def _choices_sampler(draft_tokens, draft_probs, target_probs, rng):
    """Right for ex04, written differently from the reference (rng.choices, u compared after the draw)."""
    k = len(draft_tokens)
    if len(draft_probs) != k or len(target_probs) < k or any(draft_probs[i][x] == 0 for i, x in enumerate(draft_tokens)):
        raise ValueError("bad draft")
    accepted = []
    for i, x in enumerate(draft_tokens):
        p, q = target_probs[i], draft_probs[i]
        if rng.random() * q[x] < p[x]:
            accepted.append(x)
            continue
        residual = [max(0.0, a - b) for a, b in zip(p, q)]
        token = rng.choices(range(len(p)), weights=residual if sum(residual) > 0 else p)[0]
        return {"accepted_tokens": accepted, "bonus_token": token, "acceptance_count": len(accepted)}
    bonus = rng.choices(range(len(target_probs[k])), weights=target_probs[k])[0] if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}


def test_ex04_statistics_pass_a_different_correct_sampler_and_fail_the_argmax_one():
    assert check(_choices_sampler, exercise="ex04", quiet=True).score == 100
    report = check(_argmax_sampler, exercise="ex04", quiet=True)
    failed = [c for c in report.cases if not c.passed]
    # The argmax correction gives [0.1, 0.7, 0.2, 0.0] against p = [0.1, 0.6, 0.3, 0.0]: TV 0.1, and
    # token 1's share 0.7 instead of 0.6 is 0.1 / sqrt(0.6 * 0.4 / 4000) = 13 standard errors off (limit 4.5).
    assert [c.name for c in failed] == ["first token ~ p"]
    tv = float(re.search(r"total variation ([0-9.]+)", failed[0].message).group(1))
    assert abs(tv - 0.1) < 0.03  # N = 4000: the standard error of this TV is about 0.01
    z = float(re.search(r"\|z\| = ([0-9.]+)", failed[0].message).group(1))
    assert z > 4.5


# ---- batch --------------------------------------------------------------------------------------------------
def test_batch_grades_every_file_and_one_crash_costs_nobody_else(tmp_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    for name in ("good_plain.py", "wrong_strict_less.py", "broken_syntax.py", "hostile_os_exit_k0.py"):
        (folder / name).write_text(open(os.path.join(SUBS, name)).read())
    out = tmp_path / "grades.csv"
    result = grade_cli("--batch", str(folder), "--exercise", "ex01", "--csv", str(out), "--jobs", "2",
                       "--timeout", "5")
    assert result.returncode == 0
    rows = {r["file"]: r for r in csv.DictReader(open(out))}
    got = {f: (int(r["score"]), int(r["bonus"]), r["status"]) for f, r in rows.items()}
    assert got == {"good_plain.py": (100, 10, "passed"), "wrong_strict_less.py": (90, 10, "failed"),
                   "broken_syntax.py": (0, 0, "error"), "hostile_os_exit_k0.py": (94, 10, "failed")}
    assert rows["wrong_strict_less.py"]["u == p/q is accepted"] == "0"
    assert rows["wrong_strict_less.py"]["seed 1: all accepted, bonus"] == "1"
    assert list(rows["good_plain.py"])[:7] == ["file", "score", "max_score", "bonus", "plain_python", "status",
                                                "message"]


def test_importing_the_grader_and_all_cases_imports_no_numpy():
    code = ("import sys, specdec.grading, specdec.grade\n"
            "from specdec.grading.cases import exercise\n"
            "[exercise(e) for e in ('ex01', 'ex02', 'ex03', 'ex04', 'ex05')]\n"
            "print('numpy' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
