"""grader/registry.py: the grader and every exercise's cases load without NumPy (the plain-Python bonus needs it)."""

import importlib
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


def test_an_ex01_example_on_an_edge_gets_no_twin_rather_than_one_drawn_on_an_edge():
    """ex01's twin of an example asks what the example asks (`_path`); an example whose own u is within EDGE of its
    ratio has no such path (None), and a draw that also sits on an edge (or raises) must not pass for its twin."""
    import random
    import types
    grading = importlib.import_module("exercises.ex01_verify.grading")
    args = ([0], [[0.5, 0.5]], [[0.25, 0.75], [0.5, 0.5]], [0.5])   # u == p/q: exactly on the edge
    assert grading._path(*args) is None
    example = types.SimpleNamespace(name="edge", expected="{...}", calls=[{"args": args}])
    assert all(grading._rename(random.Random(s), example) is None for s in range(20))
