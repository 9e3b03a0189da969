"""Grade a folder of submissions in parallel; one CSV row per file, whatever happens.

Each file is graded by `grade_file` from its own private copy, in its own sandboxes with their own
time limits, and in a grading process of its own (`grade_apart`): that process parses what the
sandbox sends back, reads the notebook, judges. So nothing a file does (a reply that takes seconds
to parse and holds that process's interpreter lock, a notebook that keeps IPython busy, a crash of
the grader's own code) can slow, starve or kill the grading of another file; a grading process
still running GRACE seconds after the submission's time is killed, with everything it started, and
the row says so. The CSV is written by this process alone, after every sandbox is gone. Every
entry named `*.py` or `*.ipynb` gets a row: a symbolic link, a folder, a FIFO or a device is refused
(in its row) and never opened. Without `exercise`, the files must name one exercise between them.

CSV columns: file, score, max_score, bonus, plain_python, status (passed / failed / error),
diagnosis, message (why it could not be graded), then one column per case holding 1 (passed)
or 0. File names go through `report.label` (unambiguous), other learner text through `csv_cell`.

    >>> import os
    >>> [os.path.basename(p) for p in submissions_in("tests/submissions/ex03")]
    ['wrong_no_clip.py', 'wrong_no_empty_fallback.py', 'wrong_no_length_check.py', 'wrong_not_normalized.py']
"""

import collections
import csv
import os
import pickle
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from . import diagnose, verdict
from .registry import exercise as get_exercise
from .report import csv_cell, label
from .submission import default_max_seconds, grade_file, infer_exercise

GRACE = 30.0  # seconds a grading process may run past the submission's own time (start-up, judging)
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def submissions_in(folder):
    """Every entry named `*.py` or `*.ipynb` directly in `folder` (not hidden), files or not, sorted by name."""
    return sorted(os.path.join(folder, n) for n in os.listdir(folder)
                  if n.endswith((".py", ".ipynb")) and not n.startswith("."))


def _child():
    """The grading process: (path, exercise, options) pickled on stdin -> ("report", Report) or ("usage", message)."""
    try:  # Linux: die with the thread that started us (and take our sandboxes along)
        import ctypes
        import signal
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux: no such call
        pass
    out, sys.stdout = sys.stdout.buffer, sys.stderr  # stdout carries the result alone
    path, exercise, options, known = pickle.load(sys.stdin.buffer)
    if known:
        diagnose.remember(exercise, options.get("seed", 0), known)
    try:
        result = ("report", grade_file(path, exercise, **options))
    except ValueError as exc:
        result = ("usage", str(exc))
    out.write(pickle.dumps(result))
    out.flush()


def grade_apart(path, exercise=None, known=None, **options):
    """`grade_file(path, exercise, **options)` in a grading process of its own; a Report whatever happens to it.

    `known`: the exercise's signatures for this seed (`diagnose.signatures`), if the caller has them:
    the grading process then need not run the catalogue of mistakes again. Raises ValueError for the
    grader's own usage errors, as grade_file does.
    """
    limit = (options.get("max_seconds") or default_max_seconds(options.get("timeout", 10.0))) + GRACE
    code = f"import sys; sys.path.insert(0, {PACKAGE_ROOT!r}); from grader.batch import _child; _child()"
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(pickle.dumps((path, exercise, options, known if exercise else None)), timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()  # its sandboxes die with it (bwrap --die-with-parent)
        proc.communicate()
        why = f"grading this file took more than {limit:g} s and was stopped (the grader's own work on it ran away)"
        return _not_graded(path, exercise, options, why)
    if proc.returncode == 0 and out:
        kind, value = pickle.loads(out)  # from our own grading process: the submission never writes there
        if kind == "usage":
            raise ValueError(value)
        return value
    last = (err.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
    return _not_graded(path, exercise, options, f"the grading process failed (exit code {proc.returncode}): {last}")


def _not_graded(path, exercise, options, why):
    ex = get_exercise(exercise or infer_exercise(path) or "ex01")
    seed = options.get("seed", 0)
    return verdict.not_run(ex, seed, ex.cases(seed), why, source=label(os.path.basename(path)))


def _grade_one(path, exercise, options, known):
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):  # it could point at the course's solutions or at another learner's file
            raise ValueError("a symbolic link, not a file: refused (hand in the file itself)")
        if not stat.S_ISREG(mode):
            raise ValueError("not a regular file (a folder, FIFO or device): refused")
        return grade_apart(path, exercise, known, **options, links=False)
    except (OSError, ValueError) as exc:  # e.g. no exercise in the name: this row says so, the batch goes on
        return _not_graded(path, exercise, options, str(exc) or type(exc).__name__)


def folder_exercise(paths):
    """The one exercise the files' names give (None if none does); ValueError if they name several."""
    named = collections.Counter(e for e in map(infer_exercise, paths) if e)
    if len(named) > 1:
        counts = ", ".join(f"{e}: {n} file" + "s" * (n != 1) for e, n in sorted(named.items()))
        raise ValueError(f"the file names name several exercises ({counts}): pass --exercise")
    return next(iter(named), None)


def grade_folder(folder, exercise=None, jobs=2, progress=True, **options):
    """Reports for every submission in `folder`, in file-name order (`options` go to grade_file)."""
    paths = submissions_in(folder)
    exercise = exercise or folder_exercise(paths)
    known = None
    if exercise:
        ex, seed = get_exercise(exercise), options.get("seed", 0)  # an unknown exercise: the command's error
        known = diagnose.signatures(ex, seed, ex.cases(seed)) if len(paths) > 1 else None  # once, for every file
    bar = None
    if progress:
        try:
            from tqdm import tqdm
            bar = tqdm(total=len(paths), desc="grading", unit="file", file=sys.stderr)
        except ImportError:
            pass
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_grade_one, p, exercise, options, known) for p in paths]
        reports = []
        for future in futures:
            reports.append(future.result())
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return reports


def write_csv(reports, csv_path):
    """One row per report; per-case columns named after the first report's exercise."""
    case_names = [c.name for c in reports[0].cases] if reports else []
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["file", "score", "max_score", "bonus", "plain_python", "status", "diagnosis", "message"]
                        + [csv_cell(n) for n in case_names])
        for r in reports:
            passed = {c.name: int(c.passed) for c in r.cases}
            writer.writerow([csv_cell(r.source, 2000), r.score, r.max_score, r.bonus,
                             "" if r.plain_python is None else int(bool(r.plain_python)), r.status,
                             csv_cell(r.diagnosis, 400), csv_cell(r.error)] + [passed.get(n, 0) for n in case_names])
