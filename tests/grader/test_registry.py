"""grader/registry.py: the grader and every exercise's cases load without NumPy (the plain-Python bonus needs it)."""

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_importing_the_grader_and_all_cases_imports_no_numpy():
    code = ("import sys, grader, exercises, specdec.grade\n"
            "from grader.registry import EXERCISES\n"
            "[e.cases(0) for e in EXERCISES.values()]\n"
            "print('numpy' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
