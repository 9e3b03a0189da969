"""grader/submission.py: reading a learner's file, and pointing at the learner's line when it fails.

A batch reads from a folder learners may still write to: a checked file swapped for a symbolic link to the
course's solution is refused, and a FIFO is refused without blocking on it. A file that fails at import or
does not parse is reported at its own line.
"""

import os
import re

import pytest

from grader import grade_file
from grader.submission import read_code
from helpers import MODE, ROOT, SUBS

TIMEOUT = 5.0


def test_a_link_is_refused_even_when_it_appears_after_the_intake(tmp_path):
    """A folder learners can still write to could swap a checked file for a link to the course's solution."""
    link = tmp_path / "ex01_mallory.py"
    os.symlink(os.path.join(ROOT, "exercises", "ex01_verify", "solution.py"), link)
    report = grade_file(str(link), "ex01", timeout=1.0, mode="process")
    assert (report.status, report.score) == ("error", 0) and "symbolic links" in report.error
    fifo = tmp_path / "ex01_fifo.py"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_code(str(fifo))  # without blocking on it


@pytest.mark.slow
def test_a_learners_crash_shows_the_learners_line():
    report = grade_file(os.path.join(SUBS, "ex01", "broken_raises_at_import.py"), "ex01", TIMEOUT, mode=MODE)
    source = open(os.path.join(SUBS, "ex01", "broken_raises_at_import.py")).read().splitlines()
    line = next(i for i, text in enumerate(source, start=1) if "raise RuntimeError" in text)
    assert f"line {line} (`{source[line - 1].strip()}`)" in report.error
    syntax = grade_file(os.path.join(SUBS, "ex01", "broken_syntax.py"), "ex01", TIMEOUT, mode=MODE)
    assert re.search(r"SyntaxError: .* at broken_syntax\.py line 3", syntax.error)
