"""grader/worker.py, the process inside the sandbox: standard library only, and every answer becomes a message.

Answers and exceptions JSON cannot hold (an int over 4,300 digits, an exception class whose name is not a str,
a str() that slices to a dict, a `__module__` that raises when compared) once killed the worker or came back
as protocol errors (tests/submissions/ex02/hostile_unencodable.py: 17 of 23 cases "the worker exited ...").
Each is now a failed case that says what came back.
"""

import ast
import os
import sys

import pytest

from grader import grade_file, worker
from grader.registry import exercise
from helpers import NEEDS_BWRAP, ROOT, SUBS


def test_the_worker_uses_the_standard_library_only():
    tree = ast.parse(open(os.path.join(ROOT, "grader", "worker.py")).read())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert not any(isinstance(n, ast.ImportFrom) and n.level > 0 for n in ast.walk(tree))  # nothing from specdec
    assert imported <= set(sys.stdlib_module_names)


def test_describe_exception_never_raises_and_gives_only_strings():
    class Raises:
        def __eq__(self, other):
            raise RuntimeError("no")
        __hash__ = object.__hash__

    class Unnamed(KeyError):
        pass
    Unnamed.__module__ = Raises()
    try:
        raise Unnamed("k")
    except Unnamed as exc:
        info = worker.describe_exception(exc, "nowhere.py")
    # str(KeyError("k")) is "'k'"; the class whose module cannot be compared is left out of the builtin ones.
    assert info == {"type": "Unnamed", "message": "'k'", "builtin_types": ["KeyError", "LookupError", "Exception",
                                                                            "BaseException", "object"]}


@pytest.mark.slow
def test_answers_and_exceptions_json_cannot_hold_fail_their_cases_with_a_message():
    """Every case fails (score 0) saying what came back; none says the worker crashed or the grader did."""
    report = grade_file(os.path.join(SUBS, "ex02", "hostile_unencodable.py"), "ex02", timeout=5.0, mode="process")
    messages = [c.message for c in report.cases]
    assert report.score == 0 and not any(c.passed for c in report.cases)
    for bad in ("worker exited", "not strings", "GRADER BUG", "protocol"):
        assert not any(bad in m for m in messages), bad
    # Said in full in a public case; a hidden case says only how it failed (verdict.redact: nothing of the file's
    # own choosing, which could carry a hidden input out).
    for said, hidden in (("is an int with more than 3913 digits", "is a huge int"),
                         ("raised (a name that is not a string): odd", "raised an exception of its own class"),
                         ("raised Sly: (str() of the exception failed)", "raised an exception of its own class"),
                         ("raised Unnamed: unnamed", "raised an exception of its own class")):
        assert any(said in c.message if not c.hidden else hidden in c.message for c in report.cases), said


@pytest.mark.slow
@NEEDS_BWRAP
def test_an_int_of_401_digits_is_a_failed_case_not_a_crash():
    for name in ("ex02", "ex05"):
        report = grade_file(os.path.join(SUBS, name, "hostile_huge_int.py"), name,
                            timeout=5.0, mode="bwrap")
        assert (report.error, report.score, report.exit_code) == ("", 0, 1)  # it never raises, so every case fails
        values = {c.name for c in exercise(name).cases(0) if not c.expected.startswith("raises")}
        assert all(("an int with 401 digits" if not c.hidden else "a huge int") in c.message
               for c in report.cases if c.name in values)
