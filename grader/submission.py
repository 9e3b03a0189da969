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
from .cases import case_seed
from .notebook import MAX_CODE, NotebookError, decode_source, localize, notebook_to_script
from .registry import exercise as get_exercise
from .report import label

MAX_NOTEBOOK = 32 * 1024 ** 2


def infer_exercise(path):
    """'ex01' from a file name such as ex01_verify.py or ex01-alice.ipynb; None if absent."""
    match = re.search(r"(?<![a-z0-9])(ex\d\d)(?!\d)", os.path.basename(path).lower())
    return match.group(1) if match else None


def read_code(path, deadline=None, links=True):
    """(code, where): the submission's Python source and, for a notebook, its line -> (cell, line) map.

    `links=False`: a symbolic link is refused when the file is opened (a batch checks first too, but a
    folder learners can still write to could swap a file for a link in between). Only a regular file is
    read: a FIFO put in its place cannot stall the grader (O_NONBLOCK).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if links else getattr(os, "O_NOFOLLOW", 0))
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


def _load_message(error, display):
    """The one-line reason a submission cannot be graded."""
    if error.get("type") == "missing":
        return f"the submission defines no function {error['message']}()"
    if error.get("type") == "load":
        return error["message"]
    where = error.get("where") or (f"line {error['line']}" if "line" in error else "")
    text = f" (`{error['text'].strip()}`)" if error.get("text") else ""
    detail = f"{error['type']}: {error['message']}".rstrip(": ")
    if error["type"] in ("ModuleNotFoundError", "ImportError") and any(
            n in error["message"] for n in ("specdec", "grader", "exercises")):
        detail += " (the grader runs your code without the course package: write the function yourself)"
    return f"{detail}" + (f" at {display} {where}{text}" if where else "")


def grade_file(path, exercise=None, timeout=10.0, max_seconds=None, mode="auto", seed=0, links=True):
    """Grade `path` on `exercise` (inferred from the file name when None); `links=False` refuses a symbolic link.

    Raises ValueError only for the grader's own usage errors (no such file,
    unknown exercise) and SandboxError for `mode="bwrap"` where bwrap cannot run;
    a broken submission gives a Report with `error` set.
    """
    if not os.path.isfile(path):
        raise ValueError(f"no such file: {path}")
    if not path.endswith((".py", ".ipynb")):
        raise ValueError(f"{path}: expected a .py file or an exercise notebook (.ipynb)")
    name = exercise or infer_exercise(path)
    if name is None:
        raise ValueError(f"cannot tell the exercise from the file name {os.path.basename(path)!r}: "
                         "pass --exercise ex01 (or name the file ex01_...)")
    ex = get_exercise(name)
    started = time.monotonic()
    mode, _ = sandbox.resolve(mode)
    max_seconds = max_seconds or default_max_seconds(timeout)
    display = label(os.path.basename(path))
    fields = {"source": display, "sandbox": mode}
    try:
        code, where = read_code(path, started + max_seconds, links)
    except (NotebookError, OSError) as exc:
        return verdict.not_run(ex, seed, ex.public, f"cannot read {display}: {exc}", **fields)
    fields["fingerprint"] = similar.fingerprint(code, ex.stub)
    own = case_seed(seed, code)   # this file's hidden cases: from the secret and its own code (cases.case_seed)
    cases = ex.cases(own)
    requests = [c.request(i) for i, c in enumerate(cases)]
    replays = [c.replay for c in cases]
    with tempfile.TemporaryDirectory(prefix="specdec-grade-") as private:
        os.chmod(private, 0o711)  # "user" mode: the worker's uid may open the copy by its name, list nothing
        copy = os.path.join(private, "submission.py")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(code)
        os.chmod(copy, 0o444)  # readable by the sandbox's unprivileged uid; nobody writes it
        run = session.run(copy, display, ex.functions, requests, mode, False, timeout, max_seconds, started, replays)
        plain = _report(ex, seed, cases, run, where, display, fields, numpy=False, key=own)
        spent = run.cpu_seconds   # the submission's time is its sandboxes' CPU time: run A's counts against run B
        left = min(max_seconds - spent, started + session.wall_cap(max_seconds) - time.monotonic())
        if plain.status == "passed" or not run.numpy_wanted or not sandbox.numpy_dirs() or left < 1:
            return _bonus_note(plain, None, mode)
        run = session.run(copy, display, ex.functions, requests, mode, True, timeout, max_seconds, started, replays,
                          spent=spent)
        with_numpy = _report(ex, seed, cases, run, where, display, fields, numpy=True, key=own)
    return _bonus_note(plain, with_numpy, mode)


def default_max_seconds(timeout):
    """A submission's total time when not given: room for three timeouts, and a minute at least."""
    return max(60.0, 3 * timeout + 30.0)


def _report(ex, seed, cases, run, where, display, fields, numpy, key):
    _localize(run, where)
    if run.load_error:
        report = verdict.not_run(ex, seed, cases, _load_message(run.load_error, display), **fields)
    else:
        report = verdict.build(ex, seed, cases, run.outcomes, key=key, **fields)
    report.plain_python = None if run.load_error else not numpy and not run.numpy_seen
    return report


def _bonus_note(plain, with_numpy, mode):
    """The report to keep, saying how the bonus was decided.

    Without a second run: run A's report, bonus and all. With one (run A was not
    perfect and asked for NumPy): the higher of the two scores, and no bonus.
    """
    where = {"bwrap": "a sandbox with no NumPy on its filesystem",
             "user": "a process of an unprivileged user with NumPy's import blocked (best effort)"}.get(
        mode, "a plain process with NumPy's import blocked (best effort: not sandboxed)")
    if with_numpy is None:
        plain.bonus_note = f"plain-Python bonus: graded in {where}: {plain.score}" + (
            f" -> +{plain.bonus}" if plain.bonus else
            " (the bonus needs every case passed: 0 here)" if plain.plain_python
            else "; NumPy's compiled core was loaded anyway: no bonus")
        return plain
    keep = with_numpy if with_numpy.score > plain.score or (plain.error and not with_numpy.error) else plain
    keep.plain_python = False
    keep.bonus_note = (f"no plain-Python bonus: graded in {where} it asked for NumPy and scored {plain.score}"
                       + (" (it could not load)" if plain.error else "")
                       + f"; graded again with NumPy available (read-only): {with_numpy.score}; "
                       + f"the higher score is kept ({keep.score})")
    return keep
