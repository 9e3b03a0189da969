"""Honest notebooks and files that Jupyter (or Python) runs top to bottom get the score their function earns (issue 19).

Each of tests/submissions/ex01/honest/ scored 0/100 (the OrderedDict 14/100) before: `display(...)`, IPython.display,
a matplotlib plot cell with NumPy, `out = %time f(...)`, `t = %timeit -o ...`, `%%capture cap`, `%%writefile`
then `import helper`, nbformat 3, saved outputs of 1.1 million numbers, a 12 s self-check cell, an extra
`import matplotlib` cell beside the notebook's own check cell, a lone surrogate (which broke --json), an
OrderedDict result, a `# coding: latin-1` file. Each holds a correct plain-Python verify_speculative_tokens:
100 (+10), through `python -m specdec.grade --json` (one JSON document, whatever the input). The bonus is
decided from the graded function: the plot cell's NumPy is skipped in the plain-Python run (worker.load).
"""

import json
import os
import subprocess
import sys

import pytest

from grader import notebook, sandbox, worker
from helpers import ROOT, SUBS

HONEST = os.path.join(SUBS, "ex01", "honest")
# good_latin1.py: the grader reads a .py file in the encoding it declares (submission.read_code calls
# notebook.decode_source), and the worker compiles text, so the coding line is then only a comment.


def _grade(name, *extra):
    cmd = [sys.executable, "-m", "specdec.grade", os.path.join(HONEST, name), "--exercise", "ex01", "--json", *extra]
    result = subprocess.run(cmd, capture_output=True, cwd=ROOT, timeout=300)
    return result, json.loads(result.stdout.decode("utf-8"))  # exactly one document


HONEST_FILES = sorted(n for n in os.listdir(HONEST) if n != "good_slow_selfcheck.ipynb")


@pytest.fixture(scope="module")
def honest_class(tmp_path_factory):
    """Every honest file graded once, as one class (`grade_folder`: each in its own sandboxes, as alone)."""
    from grader.batch import grade_folder
    folder = tmp_path_factory.mktemp("honest")
    for name in HONEST_FILES:
        (folder / name).write_bytes(open(os.path.join(HONEST, name), "rb").read())
    mode = "bwrap" if not sandbox.bwrap_problem() else "process"
    return {r.source: r for r in grade_folder(str(folder), "ex01", jobs=2, progress=False, mode=mode)}


@pytest.mark.slow
@pytest.mark.parametrize("name", HONEST_FILES)
def test_each_honest_file_gets_the_score_its_function_earns(honest_class, name):
    if name == "good_latin1.py":
        with open(os.path.join(HONEST, name), "rb") as f:
            assert "résidu" in notebook.decode_source(f.read())
    report = honest_class[name]
    assert (report.score, report.bonus, report.status) == (100, 10, "passed"), report.error


@pytest.mark.slow
def test_the_command_line_gives_an_honest_notebook_one_json_document():
    result, report = _grade("good_lone_surrogate.ipynb")   # a lone surrogate once broke --json
    assert (report["score"], report["bonus"], result.returncode) == (100, 10, 0), report.get("error")


@pytest.mark.slow
def test_a_twelve_second_self_check_cell_fits_the_notebooks_own_time_budget():
    result, report = _grade("good_slow_selfcheck.ipynb")
    assert (report["score"], report["bonus"], result.returncode) == (100, 10, 0), report.get("error")


@pytest.mark.slow  # a 5.5 MB notebook and 100,001 brackets to skip: about 0.5 s, more on a busy machine
def test_outputs_are_skipped_before_anything_is_counted():
    with open(os.path.join(HONEST, "good_big_output.ipynb")) as f:
        text = f.read()
    assert text.count(",") > notebook.MAX_VALUES  # what the old count refused
    cells = notebook.code_cells(text)
    assert [n for n, _ in cells] == [2, 3] and "print([0] * 1_100_000)" in cells[1][1]
    with pytest.raises(notebook.NotebookError, match="outputs hold more than"):
        notebook.code_cells('{"cells": [{"outputs": [' + "[]," * (notebook.MAX_OUTPUT_STRUCTURES + 1) + '[]]}]}')


def test_nbformat_3_cells_and_lone_surrogates_are_read():
    with open(os.path.join(HONEST, "good_nbformat3.ipynb")) as f:
        cells = notebook.code_cells(f.read())
    assert [n for n, _ in cells] == [2, 3] and "def verify_speculative_tokens" in cells[0][1]
    with open(os.path.join(HONEST, "good_lone_surrogate.ipynb")) as f:
        script, _ = notebook.notebook_to_script(f.read())
    assert "\ufffd" in script and script.encode("utf-8")  # encodable: no lone surrogate left


def test_a_mapping_or_a_subclass_result_is_sent_as_the_plain_value_it_holds():
    import collections
    import enum

    class Lying(dict):
        def items(self):
            return [("forged", 1)]

        def __eq__(self, other):
            return True

    class Big(enum.IntEnum):
        TWO = 2
    assert worker.to_plain(collections.OrderedDict(a=[Big.TWO], b=collections.defaultdict(int))) == {"a": [2], "b": {}}
    assert worker.to_plain(Lying(real=3)) == {"real": 3}  # its own items() is never called
    assert worker.to_plain(collections.UserDict(x=(1,))) == {"x": [1]}


@pytest.mark.slow
def test_a_failing_self_test_cell_stops_the_run_where_jupyter_stops_and_is_named(honest_class):
    """Run All stops at the first cell that raises: the function above it is graded, the redefinition below it
    never runs, and the report says which cell stopped it (issue 25: such a notebook scored 0, "cannot grade")."""
    report = honest_class["good_failing_selftest.ipynb"]
    assert (report.score, report.bonus) == (100, 10)
    assert report.notebook_note.startswith("cell 3 raised AssertionError: my test (cell 3, line 2")
