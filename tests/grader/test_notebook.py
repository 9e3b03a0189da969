"""grader/notebook.py: a learner's notebook read as IPython reads it, and hostile notebooks refused cleanly.

Honest notebooks: magics (`%time`, `%%time`, `!cmd`, options such as `%timeit -n 10 -r 2 stmt`, which once ran
as the code `n 10 -r 2 stmt`), continuation lines that start with `!=` or `%`, `check()` calls (dropped), and
line separators Python does not cut at (U+2028, U+2029, \\x85, \\x0c: str.splitlines() once cut a comment there
and turned the rest into code). Hostile ones: JSON nested too deeply, millions of tiny values (32 MiB of `[],`
took 830 MB and 5.8 s to parse: now counted on the text first, at most `notebook.MAX_VALUES`), a cell that takes
IPython too long to read; malformed files are exit 2 with a clear message.
"""

import json
import sys
import os
import time

import nbformat
import pytest

from grader import grade_file
from grader.notebook import MAGIC, MAX_VALUES, NotebookError, code_cells, notebook_to_script, python_lines
from helpers import MODE, NEEDS_BWRAP, ROOT, SUBS, cli

TIMEOUT = 5.0
OPTIONS = {"timeout": 5.0, "max_seconds": 40.0, "mode": "bwrap", "seed": 314159}


# An honest notebook's long cell: %time first, then 90 lines using % and != (none of them a magic).
LONG_CELL = json.load(open(os.path.join(SUBS, "ex01", "good_long_cell.ipynb")))["cells"][1]["source"]


# ---- reading cells as IPython does -----------------------------------------------------------------------------------
def test_ipython_reads_only_cells_it_reads_quickly_and_only_until_the_deadline():
    flood = "%time x = 1\n" * 2000  # IPython would read this cell again for each of its 2000 magics
    script, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": flood}]}))
    assert script.splitlines().count("%time x = 1") == 2000  # kept as written
    assert len(MAGIC.findall(LONG_CELL)) == 1  # its % formatting and != are not magics: only %time counts
    honest, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": LONG_CELL}]}))
    assert "%time pass" not in honest.splitlines() and "run_line_magic('time', 'pass')" in honest  # transformed
    with pytest.raises(NotebookError, match="took too long"):
        notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": "x = 1"}]}), time.monotonic() - 1)
    unparsable, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code",
                                                              "source": "x = " + "-" * 5000 + "1"}]}))
    assert "-" * 5000 in unparsable  # ast could not read it: kept, for the sandbox to report


def test_cells_are_cut_into_lines_where_python_cuts_them():
    assert python_lines("# a\u2028b\u2029c\x85d\x0ce\nx = 1\r\ny = 2\rz = 3\n") == \
        ["# a\u2028b\u2029c\x85d\x0ce", "x = 1", "y = 2", "z = 3"]
    cell = "# see\u2028 the paper\nx = 1\ncheck(f)\ny = 2\n"
    script, where = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": cell}]}))
    lines = python_lines(script)
    assert lines[where.index((1, 1))] == "# see\u2028 the paper"  # still one comment
    assert [lines[where.index((1, i))] for i in (2, 3, 4)] == ["x = 1", "pass", "y = 2"]  # the check, not y, dropped


@pytest.mark.parametrize("magic, expected", [
    ("%timeit -n 10 -r 2 f([1.0, -2.0])", "f([1.0, -2.0])"),   # options with a value, as separate words
    ("%timeit -n10 -qo f(x)", "f(x)"),                         # a value in the word; flags run together
    ("%prun -s cumulative -l 5 -q f()", "f()"),
    ("%time f(-1)", "f(-1)"),                                   # no options: a minus sign stays code
])
def test_a_magics_options_are_not_run_as_code(magic, expected, monkeypatch):
    """`%timeit -n 10 stmt` ran as `n 10 stmt`: a SyntaxError, so an honest notebook could not be graded (0)."""
    script, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": magic}]}))
    ran = []
    namespace = {"f": lambda *args: ran.append(args), "x": 0}
    # The script's prelude puts stand-ins for IPython in sys.modules (in the sandbox, where it runs): not here.
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    exec(script, namespace)
    assert ran == [eval(expected, {"f": lambda *args: args, "x": 0})]


def _notebook(path, *cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# my work")] + [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)


@pytest.mark.slow
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


@pytest.mark.slow
@NEEDS_BWRAP
def test_an_honest_notebook_timing_with_options_gets_full_marks():
    report = grade_file(os.path.join(SUBS, "ex02", "good_timeit_options.ipynb"), "ex02", **OPTIONS)
    assert (report.error, report.score, report.status) == ("", 100, "passed")  # cannot grade (0) before


@pytest.mark.slow
def test_notebook_errors_point_at_the_cell(tmp_path):
    path = str(tmp_path / "ex01_bob.ipynb")
    _notebook(path, "x = 1", "def verify_speculative_tokens(*args):\n    return [][0]")
    report = grade_file(path, timeout=TIMEOUT, mode=MODE)
    assert "raised IndexError: list index out of range (cell 3, line 2: `return [][0]`)" in report.cases[0].message


@pytest.mark.slow
def test_exercise_notebook_grades_as_its_stub():
    report = grade_file(os.path.join(ROOT, "exercises", "ex01_verify", "ex01_verify.ipynb"), timeout=TIMEOUT, mode=MODE)
    assert (report.error, report.score, report.exit_code) == ("", 0, 1)
    assert report.diagnosis.startswith("Not written yet")


# ---- hostile and malformed notebooks ---------------------------------------------------------------------------------
def test_a_notebook_nested_too_deeply_is_a_notebook_error():
    with pytest.raises(NotebookError, match="nested too deeply"):
        code_cells('{"cells": ' + "[" * 100000 + "]" * 100000 + "}")


@pytest.mark.slow
def test_a_notebook_of_millions_of_values_is_refused_before_it_is_parsed(tmp_path):
    flood = '{"cells": [], "metadata": {"x": [' + "[]," * MAX_VALUES + '[]]}, "nbformat": 4, "nbformat_minor": 5}'
    with pytest.raises(NotebookError, match=f"more than {MAX_VALUES} values"):
        code_cells(flood)
    path = tmp_path / "flood_ex01.ipynb"
    path.write_text(flood)
    report = grade_file(str(path), "ex01", timeout=5.0, mode="process")
    assert report.status == "error" and report.score == 0 and f"more than {MAX_VALUES} values" in report.error
    honest = os.path.join(ROOT, "exercises", "ex01_verify", "ex01_verify.ipynb")
    assert code_cells(open(honest).read())  # an honest notebook holds a few thousand values at most


@pytest.mark.slow
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
