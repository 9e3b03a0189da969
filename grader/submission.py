"""Grade one submission file (a .py file or an exercise notebook) in the sandbox; return a Report.

The file is read once (at most 1 MiB of code), turned into a script if it is
a notebook (within the submission's time), and written to a private copy: the
sandbox only ever sees that copy, read-only, compiled from source (no .pyc is
read or written).

The plain-Python bonus is decided outside the submission's control. Run A is
a sandbox with no NumPy anywhere on its filesystem; only run A can earn the
bonus. If run A is not perfect and this machine has NumPy, run B grades the
same copy in a sandbox where NumPy is bound read-only (NumPy is allowed, it
just earns no bonus), and the report keeps whichever total is higher and
says so. Both runs share the submission's time limit (`max_seconds`).

    >>> infer_exercise("homework/ex01_verify_alice.py"), infer_exercise("notes.py")
    ('ex01', None)
"""

import os
import re
import stat
import tempfile
import time

from . import sandbox, session, similar, verdict
from .cases import grading_key
from .notebook import MAX_CODE, NotebookError, cells_of, decode_source, localize, notebook_to_script, python_lines
from .registry import exercise as get_exercise
from .report import label

MAX_NOTEBOOK = 32 * 1024 ** 2


def infer_exercise(path):
    """'ex01' from a file name such as ex01_verify.py or ex01-alice.ipynb; None if absent."""
    match = re.search(r"(?<![a-z0-9])(ex\d\d)(?!\d)", os.path.basename(path).lower())
    return match.group(1) if match else None


def read_code(path, deadline=None):
    """(code, where): the submission's Python source and, for a notebook, its line -> (cell, line) map.

    A symbolic link is refused when the file is opened (the intake made the copy, but a folder learners can
    still write to could swap a file for a link in between). Only a regular file is read: a FIFO put in its
    place cannot stall the grader (O_NONBLOCK).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    with open(os.open(path, flags), "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError("not a regular file")
        data = f.read(MAX_NOTEBOOK + 1)
    if path.endswith(".ipynb"):
        if len(data) > MAX_NOTEBOOK:
            raise NotebookError(f"the notebook is larger than {MAX_NOTEBOOK // 1024 ** 2} MiB")
        code, where = notebook_to_script(data.decode("utf-8", errors="replace"), deadline)
    else:
        code, where = decode_source(data), None   # in the encoding it declares (PEP 263), as Python reads it
    if len(code.encode()) > MAX_CODE:
        raise NotebookError(f"more than {MAX_CODE // 1024} KiB of code")
    return code, where


def _localize(run, where):
    localize(run.outcomes, where, run.load_error)
    if run.notes:
        localize([], where, run.notes["error"])


def _load_message(error, display):
    """The one-line reason a submission cannot be graded."""
    if error.get("type") == "missing":
        return f"the submission defines no function {error['message']}()"
    if error.get("type") == "load":
        return error["message"]
    where = error.get("where") or (f"line {error['line']}" if "line" in error else "")
    text = f" (`{error['text'].strip()}`)" if error.get("text") else ""
    if error["type"] == "EOFError":
        return (f"it calls input() while loading{' (' + where + text + ')' if where else ''}: the grader has no "
                "keyboard, so input() gets nothing (EOFError): remove the call")
    detail = f"{error['type']}: {error['message']}".rstrip(": ")
    if error["type"] in ("ModuleNotFoundError", "ImportError") and any(
            n in error["message"] for n in ("specdec", "grader", "exercises")):
        detail += " (the grader runs your code without the course package: write the function yourself)"
    return f"{detail}" + (f" at {display} {where}{text}" if where else "")


def grade_file(path, exercise=None, timeout=10.0, max_seconds=None, mode="auto", seed=0, display=None, lock=None):
    """Grade `path` (a private copy the intake made, or any .py/.ipynb file) on `exercise` (inferred from the
    file's name when None); `display`: the name the report shows (default: the file's own name).

    Raises ValueError only for the grader's own usage errors (no such file, unknown exercise) and SandboxError
    for `mode="bwrap"` where bwrap cannot run; a broken submission gives a Report with `error` set. `lock`: a
    batch's sandbox lock (session._Lock).
    """
    if not os.path.isfile(path):
        raise ValueError(f"no such file: {path}")
    if not path.endswith((".py", ".ipynb")):
        raise ValueError(f"{path}: expected a .py file or an exercise notebook (.ipynb)")
    display = display or label(os.path.basename(path))
    name = exercise or infer_exercise(display)
    if name is None:
        raise ValueError(f"cannot tell the exercise from the file name {display!r}: "
                         "pass --exercise ex01 (or name the file ex01_...)")
    ex = get_exercise(name)
    started = time.monotonic()
    mode, _ = sandbox.resolve(mode)
    max_seconds = max_seconds or default_max_seconds(timeout)
    fields = {"source": display, "sandbox": mode}
    try:
        code, where = read_code(path, started + max_seconds)
    except (NotebookError, OSError) as exc:
        report = verdict.not_run(ex, seed, ex.public, f"cannot read {display}: {exc}", **fields)
        report.seconds = time.monotonic() - started
        return report
    fields["fingerprint"] = similar.fingerprint(code, ex.stub)
    cases = ex.cases(seed)   # every file of a class gets the same cases (cases.grading_key)
    key = grading_key(ex.name, seed)
    requests = [c.request(i) for i, c in enumerate(cases)]
    replays = [c.replay for c in cases]
    cells = cells_of(where) if where is not None else None
    lines = python_lines(code)
    with tempfile.TemporaryDirectory(prefix="specdec-grade-") as private:
        os.chmod(private, 0o711)  # "user" mode: the worker's uid may open the copy by its name, list nothing
        copy = os.path.join(private, "submission.py")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(code)
        os.chmod(copy, 0o444)  # readable by the sandbox's unprivileged uid; nobody writes it
        run = session.run(copy, display, ex.functions, requests, mode, False, timeout, max_seconds, started, replays,
                          key=key, lock=lock, cells=cells)
        plain = _report(ex, seed, cases, run, where, lines, display, fields, numpy=False)
        spent = run.cpu_seconds   # the submission's time is its sandboxes' CPU time: run A's counts against run B
        left = max_seconds - spent
        if plain.status == "passed" or not run.numpy_wanted or not sandbox.numpy_dirs() or left < 1 or run.host:
            return _finish(_bonus_note(plain, None, mode), [run], started)
        run_b = session.run(copy, display, ex.functions, requests, mode, True, timeout, max_seconds, started, replays,
                            spent=spent, key=key, lock=lock, cells=cells)
        with_numpy = _report(ex, seed, cases, run_b, where, lines, display, fields, numpy=True)
    return _finish(_bonus_note(plain, with_numpy, mode), [run, run_b], started)


def _finish(report, runs, started):
    """The report, with what its runs cost and whether a limit stopped them (for the caller's regrade)."""
    report.seconds = time.monotonic() - started
    report.cpu_seconds = sum(r.cpu_seconds for r in runs)
    report.stopped = sum(r.stopped for r in runs)
    report.host = any(r.host for r in runs)
    return report


def default_max_seconds(timeout):
    """A submission's total time when not given: room for three timeouts, and a minute at least."""
    return max(60.0, 3 * timeout + 30.0)


def _report(ex, seed, cases, run, where, lines, display, fields, numpy):
    for outcome in run.outcomes:
        verdict.checked_lines(outcome, lines)   # only the file's own lines, before they are placed in cells
    if run.load_error:
        verdict.checked_lines({"results": [{"raised": run.load_error}]}, lines)
    if run.notes:
        verdict.checked_lines({"results": [{"raised": run.notes["error"]}]}, lines)
    _localize(run, where)
    note = _notebook_note(run.notes, where)
    if run.load_error:
        message = _load_message(run.load_error, display) + (f" ({note})" if note else "")
        report = verdict.not_run(ex, seed, cases, message, **fields)
    else:
        report = verdict.build(ex, seed, cases, run.outcomes, **fields)
        report.notebook_note = note
    report.plain_python = None if run.load_error else not numpy and not run.numpy_seen
    return report


def _notebook_note(notes, where):
    """'cell 7 raised AssertionError (line 2: `...`): Jupyter's Run All stops there; graded on the cells above it'."""
    if not notes:
        return ""
    info = notes["error"]   # placed in its cell by _localize
    place = info.get("where") or (f"line {info['line']}" if "line" in info else "")
    text = f" ({place}: `{info.get('text', '')}`)" if place else ""
    message = f": {info['message']}" if info.get("message") else ""
    return (f"cell {notes['stopped_at']} raised {info['type']}{message}{text}. Jupyter's Run All stops at that "
            "cell, and so did the grader: graded on what the cells above it define")


def _bonus_note(plain, with_numpy, mode):
    """The report to keep, saying how the bonus was decided.

    Without a second run: run A's report, bonus and all. With one (run A was not
    perfect and asked for NumPy): the higher of the two scores, and no bonus.
    """
    where = {"bwrap": "a sandbox with no NumPy on its filesystem",
             "user": "a process of an unprivileged user with NumPy's import blocked (best effort)"}.get(
        mode, "a plain process with NumPy's import blocked (best effort: not sandboxed)")
    if with_numpy is None:
        if plain.bonus:
            why = f" -> +{plain.bonus}"
        elif plain.error:
            why = ": no bonus: the file could not be graded (the bonus needs it to load and pass every case)"
        elif plain.plain_python is False:
            why = ": no bonus: NumPy's compiled core was loaded (the bonus is for plain Python)"
        else:
            why = f": no bonus: it needs every case passed, and {sum(not c.passed for c in plain.cases)} failed"
        plain.bonus_note = f"plain-Python bonus: graded in {where}: {plain.score}{why}"
        return plain
    keep = with_numpy if with_numpy.score > plain.score or (plain.error and not with_numpy.error) else plain
    keep.plain_python = False
    keep.bonus_note = (f"no plain-Python bonus: graded in {where} it asked for NumPy and scored {plain.score}"
                       + (" (it could not load)" if plain.error else "")
                       + f"; graded again with NumPy available (read-only): {with_numpy.score}; "
                       + f"the higher score is kept ({keep.score})")
    return keep
