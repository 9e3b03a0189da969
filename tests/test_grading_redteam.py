"""The grader against the red team: attacks found after the rebuild, each graded with the verdict it deserves.

One class folder (a module fixture) holds honest files next to the red team's attacks
(tests/submissions/ex01: namespaces and mounts, SysV memory, many processes, replies the grading
process cannot turn into text or takes seconds to parse, exotic exceptions, the mount table,
hostile notebooks) and entries no folder should hold (a FIFO, a folder, file names that would
pass for another learner's, names that are not UTF-8). It is graded once, in bwrap, with a secret
seed, short limits and --jobs 4, the way an instructor grades. Expected scores come from the
cases' own inputs (which have K = 0, which must raise), never from the grader's output.

The fast tests below it check the same defences one level down (protocol, notebook reader, file
labels, command line), without a sandbox. Two holes in ex04's statistical cases are recorded as
strict xfails: a sampler that is wrong after step 0, and one that never samples, both score 100.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from hypothesis import given, strategies as st

from specdec.grading import batch, grade_file, protocol
from specdec.grading.batch import folder_exercise, grade_apart, grade_folder, write_csv
from specdec.grading.cases import failing_mistakes
from specdec.grading.notebook import MAGIC, NotebookError, code_cells, notebook_to_script
from specdec.grading.submission import read_code
from specdec.grading.registry import exercise
from specdec.grading.report import clean, csv_cell, label
from specdec.grading.sandbox import bwrap_problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions")
SECRET = 314159
OPTIONS = {"timeout": 1.5, "max_seconds": 6.0, "mode": "bwrap", "seed": SECRET}
CASES = exercise("ex01").cases(SECRET)
POINTS = {c.name: c.points for c in CASES}
K0 = {c.name for c in CASES if c.calls[0]["args"][0] == []}
K1 = {c.name for c in CASES if len(c.calls[0]["args"][0]) == 1}
RAISES = {c.name for c in CASES if c.expected == "raises ValueError"}
ATTACKS = ["hostile_namespace_tmpfs.py", "hostile_sysv_memory.py", "hostile_process_memory.py",
           "hostile_deep_exception.py", "hostile_load_report.py", "hostile_gil_hog.py", "hostile_exotic_exceptions.py",
           "hostile_read_mounts.py", "hostile_deep_json.ipynb", "hostile_unparsable_cell.ipynb",
           "hostile_magic_flood.ipynb"]
IMPOSTOR = "good_pl\x1b[0main.py"  # shown by a terminal as good_plain.py
NOT_UTF8 = (b"ex01_\xff.py", b"ex01_\xfe.py")
NEEDS_BWRAP = pytest.mark.skipif(bool(bwrap_problem()), reason=f"no sandbox here: {bwrap_problem()}")


def score_without(*names):
    return 100 - sum(POINTS[n] for n in set().union(*names))


def failed(report):
    return {c.name: c.message for c in report.cases if not c.passed}


def write_notebook(path, *cells):
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c} for c in cells]
    with open(path, "w") as f:
        json.dump({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, f)


GOOD = open(os.path.join(SUBS, "ex01", "good_plain.py")).read()
# An honest notebook with a long cell: %time first, then 90 lines using % and != (none of them a magic).
LONG_CELL = "%time pass\n" + "".join(f"label_{i} = '%d of %d' % ({i}, 90) if {i} != 3 else ''\n" for i in range(90)) + GOOD


# ---- the class folder, graded once ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    for name in ATTACKS + ["good_plain.py", "wrong_no_stop.py"]:
        shutil.copy(os.path.join(SUBS, "ex01", name), folder / name)
    shutil.copy(os.path.join(SUBS, "ex01", "good_plain.py"), folder / "good_again.py")
    shutil.copy(os.path.join(SUBS, "ex01", "wrong_no_stop.py"), folder / IMPOSTOR)
    write_notebook(folder / "good_long_cell.ipynb", LONG_CELL)
    os.mkfifo(folder / "ex01_fifo.py")  # opening it would block a grader that reads it
    (folder / "ex01_folder.ipynb").mkdir()
    for name, source in zip(NOT_UTF8, ("good_plain.py", "wrong_no_stop.py")):
        shutil.copy(os.path.join(SUBS, "ex01", source), os.path.join(os.fsencode(folder), name))
    reports = grade_folder(str(folder), "ex01", jobs=4, progress=False, **OPTIONS)
    write_csv(reports, str(folder.parent / "grades.csv"))
    rows = list(csv.reader(open(folder.parent / "grades.csv", newline="")))
    return {"reports": {r.source: r for r in reports}, "entries": len(os.listdir(folder)), "rows": rows,
            "folder": str(folder)}


@NEEDS_BWRAP
@pytest.mark.slow
def test_every_entry_gets_one_row_and_no_two_rows_share_a_name(graded):
    names = [row[0] for row in graded["rows"][1:]]
    assert len(names) == len(set(names)) == graded["entries"]
    assert {"good_pl\\x1b[0main.py", "ex01_\\xff.py", "ex01_\\xfe.py"} <= set(names)
    for name in ("ex01_fifo.py", "ex01_folder.ipynb"):
        report = graded["reports"][name]
        assert (report.status, report.score) == ("error", 0) and "not a regular file" in report.error


@NEEDS_BWRAP
@pytest.mark.slow
def test_honest_files_keep_exactly_their_grades(graded):
    reports = graded["reports"]
    for name in ("good_plain.py", "good_again.py", "good_long_cell.ipynb", "ex01_\\xff.py"):
        assert (reports[name].score, reports[name].bonus, reports[name].status) == (100, 10, "passed"), name
    loses = {c.name for c in CASES if "no_stop" in failing_mistakes(exercise("ex01"), c)}  # the trusted mistake
    for name in ("wrong_no_stop.py", "good_pl\\x1b[0main.py", "ex01_\\xfe.py"):  # the impostor is graded as itself
        assert set(failed(reports[name])) == loses, name


@NEEDS_BWRAP
@pytest.mark.slow
@pytest.mark.parametrize("name", ["hostile_namespace_tmpfs.py", "hostile_sysv_memory.py", "hostile_process_memory.py"])
def test_memory_outside_the_limits_is_refused(graded, name):
    report = graded["reports"][name]  # each is correct, and raises if its attack worked
    assert (report.score, report.bonus, report.status) == (100, 10, "passed"), failed(report)


@NEEDS_BWRAP
@pytest.mark.slow
def test_texts_that_are_not_strings_are_failed_cases_not_a_crash(graded):
    deep = graded["reports"]["hostile_deep_exception.py"]
    assert deep.score == 0 and deep.status == "failed"
    assert set(failed(deep).values()) >= {"the sandbox sent an exception report whose texts are not strings"}
    load = graded["reports"]["hostile_load_report.py"]
    assert (load.status, load.score) == ("error", 0)
    assert load.error == "it could not load, and sent an exception report whose texts are not strings"


@NEEDS_BWRAP
@pytest.mark.slow
def test_a_reply_that_takes_seconds_to_parse_costs_only_its_own_cases(graded):
    report = graded["reports"]["hostile_gil_hog.py"]
    assert report.score == 0 and report.status == "failed"  # and the honest files above kept their grades


@NEEDS_BWRAP
@pytest.mark.slow
def test_exotic_exceptions_fail_their_cases_and_nothing_else(graded):
    report = graded["reports"]["hostile_exotic_exceptions.py"]
    lost = failed(report)
    assert set(lost) == K0 | RAISES | (K1 - RAISES)
    assert report.score == score_without(K0, RAISES, K1)
    assert all(lost[n].startswith(("raised KeyboardInterrupt", "raised GeneratorExit")) for n in K0)
    assert all(lost[n].startswith("expected ValueError, but it raised ValueError") for n in RAISES)
    assert all(lost[n].startswith("raised Unprintable: (str() of the exception failed)") for n in K1 - RAISES)


@NEEDS_BWRAP
@pytest.mark.slow
def test_the_mount_table_names_neither_the_course_nor_the_class_folder(graded):
    messages = " ".join(failed(graded["reports"]["hostile_read_mounts.py"]).values())
    assert "leak: " in messages and "/grader/worker.py" in messages and "/work/submission.py" in messages
    assert ROOT not in messages and "specdec/grading" not in messages and graded["folder"] not in messages


@NEEDS_BWRAP
@pytest.mark.slow
@pytest.mark.parametrize("name, error", [
    ("hostile_deep_json.ipynb", "not a notebook: its JSON is nested too deeply"),
    ("hostile_unparsable_cell.ipynb", "RecursionError: maximum recursion depth exceeded during compilation"),
    ("hostile_magic_flood.ipynb", "SyntaxError: invalid syntax (hostile_magic_flood.ipynb, line "),
])
def test_hostile_notebooks_are_clean_errors(graded, name, error):
    report = graded["reports"][name]
    assert (report.status, report.score, report.exit_code) == ("error", 0, 2) and error in report.error


# ---- the grading process of its own --------------------------------------------------------------------------
def test_a_grading_process_past_its_time_is_stopped_and_its_row_says_so(monkeypatch):
    monkeypatch.setattr(batch, "GRACE", 0.0)  # no time beyond the submission's 0.01 s: starting up already exceeds it
    report = grade_apart(os.path.join(SUBS, "ex01", "good_plain.py"), "ex01", timeout=1.0, max_seconds=0.01,
                         mode="process")
    assert (report.status, report.score) == ("error", 0) and "was stopped" in report.error


def test_the_files_must_name_one_exercise(tmp_path):
    for name in ("ex01_alice.py", "ex01_bob.py", "ex03_carol.py", "notes.py"):
        (tmp_path / name).write_text("x = 1\n")
    with pytest.raises(ValueError, match=r"several exercises \(ex01: 2 files, ex03: 1 file\): pass --exercise"):
        grade_folder(str(tmp_path), progress=False, **OPTIONS)
    assert folder_exercise([str(tmp_path / "ex01_alice.py"), str(tmp_path / "notes.py")]) == "ex01"


# ---- one level down: protocol, notebook reader, labels, command line ------------------------------------------
def test_a_deep_structure_where_text_belongs_is_a_protocol_error():
    deep = []
    for _ in range(990):  # str() of this recursed past Python's limit in the grading process
        deep = [deep]
    for info in ({"type": deep, "message": "m"}, {"type": "T", "message": deep}, {"type": "T", "builtin_types": [deep]}):
        with pytest.raises(protocol.ProtocolError, match="texts are not strings"):
            protocol.clean_exception(info)
    with pytest.raises(protocol.ProtocolError):
        protocol.check_reply({"id": 0, "worker_error": deep}, {"id": 0, "calls": [{}]})


def test_a_notebook_nested_too_deeply_is_a_notebook_error():
    with pytest.raises(NotebookError, match="nested too deeply"):
        code_cells('{"cells": ' + "[" * 100000 + "]" * 100000 + "}")


def test_ipython_reads_only_cells_it_reads_quickly_and_only_until_the_deadline():
    flood = "%time x = 1\n" * 2000  # IPython would read this cell again for each of its 2000 magics
    script, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": flood}]}))
    assert script.splitlines().count("%time x = 1") == 2000  # kept as written
    assert len(MAGIC.findall(LONG_CELL)) == 1  # its % formatting and != are not magics: only %time counts
    honest, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": LONG_CELL}]}))
    assert "%time pass" not in honest.splitlines() and "run_line_magic('time', 'pass')" in honest  # transformed
    with pytest.raises(NotebookError, match="took too long"):
        notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": "x = 1"}]}), time.monotonic() - 1)
    unparsable, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": "x = " + "-" * 5000 + "1"}]}))
    assert "-" * 5000 in unparsable  # ast could not read it: kept, for the sandbox to report


@given(st.lists(st.text(max_size=12), min_size=2, max_size=6, unique=True))
def test_labels_are_printable_and_never_merge_two_names(names):
    labels = [label(n) for n in names]
    assert len(set(labels)) == len({csv_cell(x, 10 ** 6) for x in labels}) == len(names)  # '=x' vs "'=x" too
    assert all(clean(x, 10 ** 6) == x for x in labels)  # nothing left for clean() to hide


@pytest.mark.parametrize("args, env, needle", [
    (["x_ex01.py"], {"SPECDEC_GRADE_SEED": "abc"}, "argument --seed: invalid int value: 'abc'"),
    (["x_ex01.py", "--timeout", "inf"], {}, "--timeout and --max-seconds must be > 0 seconds (and finite)"),
])
def test_bad_options_are_exit_2_with_a_clear_message(tmp_path, args, env, needle):
    result = subprocess.run([sys.executable, "-m", "specdec.grade", *args], capture_output=True, text=True, cwd=ROOT,
                            env=dict(os.environ, **env), timeout=60)
    assert result.returncode == 2 and needle in result.stderr and "Traceback" not in result.stderr


# ---- known holes in ex04's statistical cases (not the sandbox's): recorded, fix proposed -----------------------
@NEEDS_BWRAP
@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason="ex04 judges only step 0 and aggregate counts: a sampler wrong after step 0, "
                   "and one that never samples but hands out exact quotas, both score 100 (see the red-team report)")
@pytest.mark.parametrize("name", ["undetected_late_steps_from_p.py", "hostile_deterministic.py"])
def test_ex04_samplers_that_are_not_lossless_lose_points(name):
    report = grade_file(os.path.join(SUBS, "ex04", name), "ex04", timeout=5.0, mode="bwrap")
    assert report.score < 100


def test_a_batch_refuses_a_link_even_when_it_appears_after_the_check(tmp_path):
    """A folder learners can still write to could swap a checked file for a link to the course's solution."""
    link = tmp_path / "ex01_mallory.py"
    os.symlink(os.path.join(ROOT, "exercises", "ex01_verify", "solution.py"), link)
    report = grade_file(str(link), "ex01", timeout=1.0, mode="process", links=False)  # what a batch asks for
    assert (report.status, report.score) == ("error", 0) and "symbolic links" in report.error
    fifo = tmp_path / "ex01_fifo.py"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_code(str(fifo))  # without blocking on it
