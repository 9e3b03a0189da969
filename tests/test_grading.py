"""The grader on honest work: reference solutions, stubs, the catalogue of mistakes, the CLI, notebooks, check().

Independent reference for the wrong submissions: each one is also run IN THIS PROCESS on every
case's inputs and compared with the course's reference functions directly (no sandbox, no
protocol, no judge); the cases it should lose come from that, and the sandboxed grader must
report exactly those, with exactly that score, and the diagnosis named by the file
(tests/submissions/exNN/wrong_<mistake>.py).
Each exercise's folder of submissions is graded once (module fixtures) and asserted on many times.
"""

import copy
import glob
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

import specdec
from specdec import theory
from grader import check, grade_file, replay
from grader.diagnose import signatures
from grader.registry import EXERCISES, exercise
from grader.release import release
from grader.sandbox import bwrap_problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions")
SOLUTIONS = sorted(glob.glob(os.path.join(ROOT, "exercises", "ex[0-9][0-9]_*", "solution.py")))
TIMEOUT = 5.0
MODE = "bwrap" if not bwrap_problem() else "process"
REFERENCE = {"verify_speculative_tokens": specdec.verify_speculative_tokens, "softmax": specdec.softmax,
             "residual_distribution": specdec.residual_distribution,
             "acceptance_rate": theory.acceptance_rate, "expected_tokens_per_step": theory.expected_tokens_per_step}


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli(capsys, *args):
    """(exit code, stdout, stderr) of `python -m specdec.grade ARGS`, run in this process."""
    from grader.cli import main
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


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
    """Names of the cases the module gets wrong, judged here against the course's reference functions."""
    failed = []
    for case in ex.cases(seed):
        args = [tuple(a["$tuple"]) if isinstance(a, dict) else a for a in case.calls[0]["args"]]
        try:
            want, want_error = REFERENCE[case.func](*copy.deepcopy(args)), None
        except (ValueError, TypeError) as exc:
            want, want_error = None, type(exc)
        mine = copy.deepcopy(args)
        try:
            got = getattr(module, case.func)(*mine)
            ok = want_error is None and same(want, got, 1e-9)
        except Exception as exc:
            ok = want_error is not None and isinstance(exc, want_error)
        if not ok or mine != args:
            failed.append(case.name)
    return failed


@pytest.fixture(scope="module")
def graded():
    """{exNN: {file name: Report}}: tests/submissions/exNN's wrong_*, good_* and numpy_* files, graded once.

    Each in its sandbox(es), three files at a time, by this process (the batch command's own path, a grading
    process per file, is graded in tests/test_grading_hostile.py).
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


# ---- the catalogue of mistakes: every file its own, correct diagnosis -----------------------------------
DETERMINISTIC = sorted(n for n, e in EXERCISES.items() if set(e.functions) <= set(REFERENCE))  # not samplers
SAMPLERS = sorted(set(EXERCISES) - set(DETERMINISTIC))


@pytest.mark.parametrize("name, file", wrong_files(*sorted(EXERCISES)))
def test_each_catalogued_mistake_gets_its_own_diagnosis(graded, name, file):
    mistake = re.sub(r"_numpy$", "", file[len("wrong_"):-3])  # wrong_module_random_numpy: the same mistake
    causes = {m.name: m.cause for m in exercise(name).mistakes}
    report = graded[name][file]
    assert report.error == "" and report.score < 100
    assert report.diagnosis == f"Most likely cause: {causes[mistake]}."


@pytest.mark.parametrize("name, file", wrong_files(*DETERMINISTIC))
def test_wrong_submission_loses_exactly_its_cases(graded, name, file):
    ex = exercise(name)
    failed = expected_failures(load(os.path.join(SUBS, name, file)), ex)
    assert failed, "the file must get something wrong, or the test is vacuous"
    report = graded[name][file]
    assert sorted(c.name for c in report.cases if not c.passed) == sorted(failed)
    points = {c.name: c.points for c in ex.cases(0)}
    assert report.score == 100 - sum(points[n] for n in failed)
    public = {c.name for c in ex.cases(0) if not c.hidden}
    bonus = 0 if public & set(failed) else ex.bonus  # all or nothing, for passing every public case
    assert report.plain_python is True and report.bonus == bonus and report.exit_code == 1


def test_every_catalogued_mistake_has_a_learner_file():
    for name, ex in EXERCISES.items():
        files = {f[len("wrong_"):-3] for _, f in wrong_files(name)}
        assert {m.name for m in ex.mistakes} <= files, name


def test_every_mistake_has_a_distinct_signature_whatever_the_seed():
    for name, ex in EXERCISES.items():
        for seed in ((0,) if name in SAMPLERS else (0, 7, 2024)):  # a sampler's statistics cost a second per seed
            sigs = signatures(ex, seed, ex.cases(seed))
            assert all(sigs.values()), (name, seed, [m for m, s in sigs.items() if not s])
            assert len(set(sigs.values())) == len(sigs), (name, seed)


@pytest.mark.slow
def test_ex04s_signatures_stay_distinct_for_a_secret_seed():  # ex06's: tests/test_grading_ex06.py
    ex = exercise("ex04")
    sigs = signatures(ex, 31337, ex.cases(31337))
    assert all(sigs.values()) and len(set(sigs.values())) == len(sigs)
    # the joint law catches it; so does any case where a later rejection's token from p is impossible
    assert "steps after the first: joint law" in sigs["late_correction_from_p"] <= {"steps after the first: joint law",
                                                                                   "mean accepted drafts"}


def test_good_files_in_the_catalogue_pass_independently(graded):
    good = load(os.path.join(SUBS, "ex01", "good_plain.py"))
    assert expected_failures(good, exercise("ex01")) == []
    assert expected_failures(good, exercise("ex01"), seed=99) == []
    report = graded["ex01"]["good_plain.py"]
    assert (report.score, report.bonus, report.diagnosis, report.exit_code) == (100, 10, "", 0)


@pytest.mark.parametrize("name, file", [("ex04", "good_choices.py"), ("ex06", "good_lazy_order.py")])
def test_samplers_that_draw_in_another_order_pass_their_statistics_and_replays(graded, name, file):
    report = graded[name][file]  # each draws only from rng, in an order of its own; some calls replayed elsewhere
    assert (report.score, report.diagnosis, report.exit_code) == (100, "", 0), [
        (c.name, c.message) for c in report.cases if not c.passed]


def test_numpy_is_allowed_but_earns_no_bonus(graded):
    report = graded["ex01"]["numpy_correct.py"]
    assert (report.score, report.plain_python, report.bonus, report.exit_code) == (100, False, 0, 0)
    assert "asked for NumPy" in report.bonus_note and "graded again with NumPy available" in report.bonus_note


def test_a_sampler_on_numpys_global_generator_is_caught_and_graded_deterministically(graded):
    first = graded["ex04"]["wrong_module_random_numpy.py"]
    again = grade_file(os.path.join(SUBS, "ex04", "wrong_module_random_numpy.py"), "ex04", TIMEOUT, mode=MODE)
    statistical = [c.name for c in exercise("ex04").cases(0)  # their calls, replayed, give other outputs
                   if c.replay and c.name != "same seed, same result"]  # (replayed too since red team 4: a pair case)
    failed = {c.name: c.message for c in first.cases if not c.passed}
    assert list(failed) == ["same seed, same result"] + statistical and len(statistical) == 4
    assert all(failed[n].startswith(replay.MESSAGE + " (hint: ") for n in statistical)
    assert [(c.name, c.passed, c.message) for c in again.cases] == [(c.name, c.passed, c.message) for c in first.cases]
    assert first.plain_python is False and first.bonus == 0


# ---- reference solutions and stubs --------------------------------------------------------------------
@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_reference_solution_scores_full_marks(solution):
    name = os.path.basename(os.path.dirname(solution))[:4]
    report = grade_file(solution, name, timeout=TIMEOUT, mode=MODE)
    assert [c.name for c in report.cases if not c.passed] == []
    assert (report.error, report.score, report.max_score, report.exit_code) == ("", 100, 100, 0)
    assert report.plain_python is True  # every reference solution is plain Python
    assert report.bonus == (10 if name == "ex01" else 0)


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_stub_scores_zero_and_says_not_written_yet(solution):
    folder = os.path.dirname(solution)
    report = grade_file(os.path.join(folder, os.path.basename(folder) + ".py"), timeout=TIMEOUT, mode=MODE)
    assert (report.error, report.score, report.bonus, report.exit_code) == ("", 0, 0, 1)  # no bonus for 0
    assert report.diagnosis.startswith("Not written yet")
    assert len(report.lines()) <= 5  # one short line for the cases, not a wall of FAILs


# ---- the command line -------------------------------------------------------------------------------------
def test_cli_table_lists_failures_first_and_hides_hidden_answers(capsys):
    code, out, _ = cli(capsys, os.path.join(SUBS, "ex01", "wrong_bonus_without_row_k.py"), "--exercise", "ex01")
    lines = out.strip().splitlines()
    assert code == 1
    points = {c.name: c.points for c in exercise("ex01").cases(0)}
    # It loses Example 2 and "all accepted, no row K" (the independent check above proves which).
    score = 100 - points['example 2: both accepted, no row K'] - points['all accepted, no row K']
    assert lines[-1] == f"score: {score}/100"  # Example 2 is public and failed: no bonus
    rows = [l for l in lines if re.match(r"  \S", l) and "/" in l[:60]]
    assert [("FAIL" in r) for r in rows] == sorted(("FAIL" in r for r in rows), reverse=True)  # failures first
    # public Example 2: input, expected and got are shown
    assert "expected: {'accepted_tokens': [0, 1], 'bonus_token': None, 'acceptance_count': 2}" in out
    assert "got:      {'accepted_tokens': [0, 1], 'bonus_token': 1, 'acceptance_count': 2}" in out
    hidden = next(l for l in lines if l.strip().startswith("all accepted, no row K *"))
    assert "hint:" in hidden and "None" not in hidden and "expected" not in hidden
    assert "Most likely cause: a bonus token without row K" in out


def test_cli_json_is_one_document_and_a_seed_changes_the_hidden_cases(capsys, monkeypatch):
    path = os.path.join(SUBS, "ex01", "wrong_strict_less.py")
    shipped = json.loads(cli(capsys, path, "--json", "--exercise", "ex01")[1])
    monkeypatch.setenv("SPECDEC_GRADE_SEED", "31337")
    secret = json.loads(cli(capsys, path, "--json", "--exercise", "ex01")[1])
    for doc in (shipped, secret):
        assert {"exercise", "score", "max_score", "bonus", "plain_python", "bonus_decided_by", "diagnosis",
                "cases", "sandbox", "seed"} <= set(doc)
        assert sum(c["points"] for c in doc["cases"] if c["passed"]) == doc["score"]
        assert doc["diagnosis"].startswith("Most likely cause: the test is u < min(1, p/q)")
    assert (shipped["seed"], secret["seed"]) == (0, 31337)
    cases = {s: exercise("ex01").cases(s) for s in (0, 31337)}
    assert [c.calls for c in cases[0] if not c.hidden] == [c.calls for c in cases[31337] if not c.hidden]
    assert sum(a.calls != b.calls for a, b in zip(cases[0], cases[31337])) >= 15  # fresh hidden inputs


@pytest.mark.parametrize("args, needle", [
    (["tests/submissions/ex01/broken_syntax.py", "--exercise", "ex01"], "SyntaxError: "),
    (["tests/submissions/ex01/broken_missing_function.py", "--exercise", "ex01"], "defines no function"),
    (["tests/submissions/ex01/good_plain.py"], "cannot tell the exercise"),   # no exNN in the name
    (["tests/submissions/ex01/good_plain.py", "--exercise", "ex09"], "unknown exercise"),
    (["no/such/file.py", "--exercise", "ex01"], "no such file"),
    (["tests/submissions/ex01/good_plain.py", "--exercise", "ex01", "--timeout", "0"], "must be > 0"),
])
def test_cli_exit_2_with_a_clear_message(capsys, args, needle):
    code, _, err = cli(capsys, *[os.path.join(ROOT, a) if a.startswith("tests/") else a for a in args])
    assert code == 2 and needle in err


def test_a_learners_crash_shows_the_learners_line():
    report = grade_file(os.path.join(SUBS, "ex01", "broken_raises_at_import.py"), "ex01", TIMEOUT, mode=MODE)
    source = open(os.path.join(SUBS, "ex01", "broken_raises_at_import.py")).read().splitlines()
    line = next(i for i, l in enumerate(source, start=1) if "raise RuntimeError" in l)
    assert f"line {line} (`{source[line - 1].strip()}`)" in report.error
    syntax = grade_file(os.path.join(SUBS, "ex01", "broken_syntax.py"), "ex01", TIMEOUT, mode=MODE)
    assert re.search(r"SyntaxError: .* at broken_syntax\.py line 3", syntax.error)


# ---- notebooks ----------------------------------------------------------------------------------------------
def _notebook(path, *cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# my work")] + [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)


def test_notebook_is_parsed_as_ipython_parses_it(tmp_path):
    good = open(os.path.join(SUBS, "ex01", "good_plain.py")).read()
    path = str(tmp_path / "ex01_alice.ipynb")
    _notebook(path,
              "%load_ext autoreload\n%autoreload 2\n!echo hello\nfiles = !ls",
              "%%time\n" + good,  # the whole solution inside a %%time cell
              "# a comment about specdec.grading and check() changes nothing\n"
              "ok = (1\n!= 2)   # a continuation line that starts with !=\nmod = (7\n%3)",
              "%time assert ok and mod == 1",
              "from grader import check\ncheck(verify_speculative_tokens, exercise='ex01')")
    report = grade_file(path, timeout=TIMEOUT, mode=MODE)
    assert (report.error, report.score, report.bonus) == ("", 100, 10)


def test_notebook_errors_point_at_the_cell(tmp_path):
    path = str(tmp_path / "ex01_bob.ipynb")
    _notebook(path, "x = 1", "def verify_speculative_tokens(*args):\n    return [][0]")
    report = grade_file(path, timeout=TIMEOUT, mode=MODE)
    assert "raised IndexError: list index out of range (cell 3, line 2: `return [][0]`)" in report.cases[0].message


@pytest.mark.parametrize("content, needle", [
    ("{not json", "not valid JSON"),
    ('{"cells": 3}', "no list of cells"),
    ('{"cells": [{"cell_type": "code", "source": 7}]}', "cell 1 has a source that is not text"),
])
def test_malformed_notebook_is_exit_2_with_a_clear_message(capsys, tmp_path, content, needle):
    path = tmp_path / "ex01_broken.ipynb"
    path.write_text(content)
    code, _, err = cli(capsys, str(path))
    assert code == 2 and needle in err and "Traceback" not in err


def test_exercise_notebook_grades_as_its_stub():
    report = grade_file(os.path.join(ROOT, "exercises", "ex01_verify", "ex01_verify.ipynb"), timeout=TIMEOUT, mode=MODE)
    assert (report.error, report.score, report.exit_code) == ("", 0, 1)
    assert report.diagnosis.startswith("Not written yet")


# ---- check() in a notebook, and the report's views ---------------------------------------------------------
def test_check_grades_a_notebook_function_like_the_cli():
    namespace = {"__name__": "__main__"}  # what a Jupyter cell's globals look like
    exec(compile(open(os.path.join(SUBS, "ex01", "wrong_strict_less.py")).read(), "<ipython-input-1>", "exec"),
         namespace)
    report = check(namespace["verify_speculative_tokens"], exercise="ex01", quiet=True)
    cli = grade_file(os.path.join(SUBS, "ex01", "wrong_strict_less.py"), "ex01", timeout=TIMEOUT, mode=MODE)
    assert [c.passed for c in report.cases] == [c.passed for c in cli.cases]
    assert report.score == cli.score and report.diagnosis == cli.diagnosis
    assert report.bonus == 0 and report.plain_python is None  # the bonus needs the sandbox


def test_check_prints_outside_jupyter_and_renders_html(capsys):
    report = check(specdec.verify_speculative_tokens)  # exercise found from the function's name
    assert capsys.readouterr().out.strip().splitlines()[-1] == "score: 100/100"
    assert (report.score, report.exit_code) == (100, 0)
    wrong = check(load(os.path.join(SUBS, "ex01", "wrong_tie_high.py")).verify_speculative_tokens,
                  exercise="ex01", quiet=True)
    html = wrong._repr_html_()
    assert html.count("<tr") == len(wrong.cases) + 1 and "Most likely cause: argmax ties" in html
    fail_rows = [m.start() for m in re.finditer("#ffebe9", html)]
    pass_rows = [m.start() for m in re.finditer("background:#ffffff", html)]
    assert len(fail_rows) == 2 and max(fail_rows) < min(pass_rows)  # failures first, shaded
    assert repr(wrong) == wrong.table()


def test_check_ex05_takes_both_functions():
    assert check(theory.acceptance_rate, theory.expected_tokens_per_step, exercise="ex05", quiet=True).score == 100
    namespace = {}
    exec("def acceptance_rate(p, q):\n    return sum(min(a, b) for a, b in zip(p, q))", namespace)
    with pytest.raises(ValueError, match="missing expected_tokens_per_step"):
        check(namespace["acceptance_rate"], exercise="ex05", quiet=True)


def test_ex04_statistics_pass_another_correct_sampler_and_measure_the_argmax_one():
    choices = load(os.path.join(SUBS, "ex04", "good_choices.py")).speculative_sample  # another order of draws
    assert check(choices, exercise="ex04", quiet=True).score == 100
    argmax = load(os.path.join(SUBS, "ex04", "wrong_argmax_not_sampled.py")).speculative_sample
    report = check(argmax, exercise="ex04", quiet=True)
    failed = {c.name: c.message for c in report.cases if not c.passed}
    assert sorted(failed) == ["bonus ~ p_K", "first token ~ p"]
    # The case's rows were drawn so that the argmax correction is >= 9 standard errors off (ex04._first_token).
    z = float(re.search(r"\|z\| = ([0-9.]+)", failed["first token ~ p"]).group(1))
    assert z > 4.5


# ---- release, stubs, the package's own hygiene ---------------------------------------------------------
def test_release_writes_statements_stubs_and_notebooks_but_no_solution(capsys, tmp_path):
    code, out, _ = cli(capsys, "release", str(tmp_path / "out"))
    written = [str(p) for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert code == 0 and f"released {len(written)} files" in out
    names = sorted(os.path.relpath(p, tmp_path / "out") for p in written)
    assert "ex01_verify/ex01_verify.ipynb" in names and "ex05_speedup/README.md" in names
    assert not any("solution" in n for n in names)
    for path in written:
        assert "### BEGIN SOLUTION" not in open(path).read()
    with pytest.raises(ValueError, match="not empty"):
        release(str(tmp_path / "out"))


def test_committed_stubs_and_notebooks_are_up_to_date():
    make = load(os.path.join(ROOT, "exercises", "make_exercises.py"))
    assert make.generate(check_only=True) == []


def test_make_stub_replaces_function_blocks_and_drops_module_blocks():
    make = load(os.path.join(ROOT, "exercises", "make_exercises.py"))
    source = ('"""Doc."""\n\n### BEGIN SOLUTION\nimport math\n### END SOLUTION\n\n\n'
              'def f(x):\n    """Say f."""\n    ### BEGIN SOLUTION\n    return math.sqrt(x)\n    ### END SOLUTION\n')
    assert make.make_stub(source) == ('"""Doc."""\n\n\ndef f(x):\n    """Say f."""\n'
                                      '    raise NotImplementedError("write f")\n')
    with pytest.raises(ValueError, match="never closed"):
        make.make_stub("def f():\n    ### BEGIN SOLUTION\n    pass\n")


def test_ex01_stub_and_statement_keep_the_template_verbatim():
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
    for file in ("ex01_verify.py", "README.md"):
        assert template in open(os.path.join(ROOT, "exercises", "ex01_verify", file)).read()


def test_importing_the_grader_and_all_cases_imports_no_numpy():
    code = ("import sys, specdec.grading, specdec.grade\n"
            "from grader.registry import EXERCISES\n"
            "[e.cases(0) for e in EXERCISES.values()]\n"
            "print('numpy' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_the_worker_uses_the_standard_library_only():
    import ast
    tree = ast.parse(open(os.path.join(ROOT, "grader", "worker.py")).read())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert not any(isinstance(n, ast.ImportFrom) and n.level > 0 for n in ast.walk(tree))  # nothing from specdec
    assert imported <= set(sys.stdlib_module_names)


def test_library_turns_overflow_into_a_clean_value_error():
    with pytest.raises(ValueError, match=r"logits\[1\] is an int of 401 digits"):
        specdec.softmax([0.0, 10 ** 400])
    with pytest.raises(ValueError, match=r"random_samples\[0\] is an int of 401 digits"):
        specdec.verify_speculative_tokens([0], [[0.5, 0.5]], [[0.5, 0.5]], [10 ** 400])
    with pytest.raises(ValueError, match=r"draft_probs\[0\]\[1\]"):
        specdec.verify_speculative_tokens([0], [[0.5, 10 ** 400]], [[0.5, 0.5]], [0.5])
    assert math.isclose(sum(specdec.softmax([10 ** 300, 10 ** 300 - 1])), 1.0)  # big but finite is fine


# ---- whose fault: the learner's line, or plainly the grader's ------------------------------------------
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


def test_ex04_shows_inputs_as_a_learner_writes_them_and_rejects_nan_tokens():
    public = [c for c in exercise("ex04").cases(0) if not c.hidden]
    assert all(c.shown_input().endswith("rng=random.Random(0)") for c in public)

    def nan_sampler(draft_tokens, draft_probs, target_probs, rng):
        out = specdec.speculative_sample(draft_tokens, draft_probs, target_probs, rng)
        return dict(out, bonus_token=float("nan")) if out["bonus_token"] is not None else out
    report = check(nan_sampler, exercise="ex04", quiet=True)
    stats = {c.name: c.message for c in report.cases if c.name in ("first token ~ p", "bonus ~ p_K")}
    assert all("bonus_token is a float (nan): token ids must be ints" in m for m in stats.values()), stats
