"""The live check: the report a learner's notebook shows (HTML) and where it says an exception was raised.

References written here: hostile texts whose every character must come out escaped (only `code` spans become
<code>), and notebooks built here whose failing line is known by construction (its cell's place in the
notebook, counting every cell from 1 at the top as the command-line grader does, and its line in that cell).
"""

import json
import os

import pytest

from grader import practice
from grader.report import CaseResult, Report, html_text

HOSTILE = "raised ValueError: <img src=x onerror=alert(1)> (line 3: `if u <= p[x] / q[x]: </code><script>1</script>`)"


def test_code_spans_render_as_code_and_everything_else_is_escaped():
    report = Report("ex01", "verify_speculative_tokens", [CaseResult("a & b", True, 5, False, HOSTILE)], 100, 10,
                    diagnosis="Most likely cause: the test is `u < min(1, p/q)`; a lone ` stays", error="",
                    bonus_note="decided by `python -m specdec.grade`")
    page = report._repr_html_()
    assert "<code>if u &lt;= p[x] / q[x]: &lt;/code&gt;&lt;script&gt;1&lt;/script&gt;</code>" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img" not in page and "<script" not in page
    assert "<code>u &lt; min(1, p/q)</code>; a lone ` stays" in page
    assert "decided by <code>python -m specdec.grade</code>" in page
    assert "a &amp; b" in page
    # every tag in the page is the report's own: <code> is the only one a learner's text can bring
    assert page.count("<code>") == page.count("</code>") == 3


def test_html_text_escapes_quotes_and_cleans_control_characters():
    assert html_text("`a\"b'c`\x1b[31m\n") == "<code>a&quot;b&#x27;c</code>?"
    assert html_text("``") == "<code></code>" and html_text("`") == "`"


def _notebook(path, cells):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": kind, "metadata": {}, "source": source,
                     **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                    for kind, source in cells]}
    path.write_text(json.dumps(nb))
    return str(path)


FUNCTION = '''def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    """Not written yet."""
    raise RuntimeError("stuck at " + "`here`")
'''


@pytest.mark.slow   # the practice cases are drawn, and their signatures computed
def test_the_practice_checker_places_a_notebooks_error_in_its_cell(tmp_path, capsys):
    path = _notebook(tmp_path / "ex01_mine.ipynb", [
        ("markdown", "# Exercise 1"), ("code", "import math\nx = 1\n"), ("markdown", "## Your code"),
        ("code", FUNCTION)])
    assert practice.main([path]) == 1
    out = capsys.readouterr().out
    assert "(cell 4, line 3: `raise RuntimeError(\"stuck at \" + \"`here`\")`)" in out   # cell 4: markdown counts
    assert "(line 3:" not in out and "(line 1" not in out


@pytest.mark.slow   # the practice cases are drawn, and their signatures computed
def test_the_practice_checker_places_an_error_at_import_in_its_cell(tmp_path, capsys):
    path = _notebook(tmp_path / "ex01_mine.ipynb", [("markdown", "# A"), ("code", "a = 1\nb = a / 0\n")])
    assert practice.main([path]) == 2
    assert "raised ZeroDivisionError: division by zero (cell 2, line 2)" in capsys.readouterr().err


@pytest.mark.slow   # the practice cases are drawn, and their signatures computed
def test_a_file_keeps_its_plain_line(tmp_path, capsys):
    path = tmp_path / "ex01_mine.py"
    path.write_text("\n" + FUNCTION)
    assert practice.main([str(path)]) == 1
    assert "(line 4: `raise RuntimeError(" in capsys.readouterr().out


@pytest.mark.slow
def test_in_jupyter_a_cells_error_is_placed_by_its_execution_count(tmp_path):
    """In a live kernel the function's cell is named as Jupyter shows it beside the cell: In[2]."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A"), nbformat.v4.new_code_cell("import math"),
                nbformat.v4.new_code_cell(FUNCTION),
                nbformat.v4.new_code_cell('from grader import check\n'
                                          'check(verify_speculative_tokens, exercise="ex01")')]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": root}}).execute()
    page = "".join(nb.cells[3].outputs[0]["data"]["text/html"])
    assert "(cell In[2], line 3: <code>raise RuntimeError(&quot;stuck at &quot; + &quot;</code>here" in page
