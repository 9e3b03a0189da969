"""Grade a class's folder in parallel; one row per entry, whatever happens.

The folder is read as an LMS delivers it (`collect.py`: files, per-student folders, zip downloads;
an entry that cannot be graded gets a row saying why). Each file is graded by `grade_file` from its
own private copy, in its own sandboxes with their own time limits, and in a grading process of its
own (`grade_apart`): that process parses what the sandbox sends back, reads the notebook, judges. So
nothing a file does (a reply that takes seconds to parse and holds that process's interpreter lock, a
notebook that keeps IPython busy, a crash of the grader's own code) can slow, starve or kill the
grading of another file; a grading process still running GRACE seconds after the submission's time
is killed, with everything it started, and the row says so. The gradebook (`gradebook.py`) and the
feedback files (`feedback.py`) are written by this process alone, after every sandbox is gone.

Each file is graded as the exercise the command names, else as the one its own name gives (ex01_...);
a file whose name gives none gets a row saying to pass --exercise. Files of one exercise that are
identical or nearly so are flagged (`similar.py`).

    >>> import os
    >>> [os.path.basename(p) for p in submissions_in("tests/submissions/ex03")]
    ['wrong_no_clip.py', 'wrong_no_empty_fallback.py', 'wrong_no_length_check.py', 'wrong_not_normalized.py']
"""

import collections
import os
import pickle
import stat
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from . import diagnose, session, similar, verdict
from .collect import collect
from .registry import FOLDERS, exercise as get_exercise
from .report import Report, label
from .submission import default_max_seconds, grade_file, infer_exercise

GRACE = 30.0  # seconds a grading process may run past the submission's own time (start-up, judging)
GRADING_MEMORY = 3 * 1024 ** 3  # the grading process's address space (honest files: under 400 MB)
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
    try:  # the grading process's own memory is bounded too: what a file sends it cannot take the machine
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (GRADING_MEMORY, GRADING_MEMORY))
    except (ImportError, ValueError, OSError):
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
    limit = session.wall_cap(options.get("max_seconds") or default_max_seconds(options.get("timeout", 10.0))) + GRACE
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
    """The row of a file that was not graded: its exercise's cases all failed, or no cases if it has none."""
    name = exercise or infer_exercise(path)
    if name not in FOLDERS:
        return Report(name or "", "", [], 0, error=why, source=label(os.path.basename(path)))
    ex, seed = get_exercise(name), options.get("seed", 0)
    return verdict.not_run(ex, seed, ex.cases(seed), why, source=label(os.path.basename(path)))


def _grade_one(entry, exercise, options, known, only=None):
    """The Report of one collected entry: graded in a process of its own, or a row saying why not."""
    name = exercise or infer_exercise(entry.name) or (only if entry.problem else None)
    try:
        if entry.problem:
            raise ValueError(entry.problem)
        if name is None:
            raise ValueError("cannot tell the exercise from the file name (no exNN in it): pass --exercise")
        mode = os.lstat(entry.path).st_mode
        if stat.S_ISLNK(mode):  # it could point at the course's solutions or at another learner's file
            raise ValueError("a symbolic link, not a file: refused (hand in the file itself)")
        if not stat.S_ISREG(mode):
            raise ValueError("not a regular file (a folder, FIFO or device): refused")
        report = grade_apart(entry.path, name, known.get(name), **options, links=False)
    except (OSError, ValueError) as exc:  # this row says why; the batch goes on
        report = _not_graded(entry.path or entry.name, name, options, str(exc) or type(exc).__name__)
    report.student, report.source = entry.student, label(entry.name)
    return report


def grade_folder(folder, exercise=None, jobs=2, progress=True, pattern=None, **options):
    """Reports for every entry `collect` finds in `folder`, in name order (`options` go to grade_file).

    Each file is graded as `exercise`, else as the exercise its own name gives; one that names none gets
    a row saying so. Similar files are flagged (`report.similar`) among those of one exercise.
    """
    if exercise:
        get_exercise(exercise)  # an unknown exercise: the command's error, before any work
    with tempfile.TemporaryDirectory(prefix="specdec-collect-") as work:
        entries = collect(folder, work, pattern)
        named = collections.Counter(exercise or infer_exercise(e.name) for e in entries if e.path)
        only = exercise or (next(iter(named)) if len(named) == 1 else None)   # for the rows of what is not a file
        seed, known = options.get("seed", 0), {}
        for name, count in named.items():  # with a secret, each file has hidden cases of its own (cases.case_seed)
            if name in FOLDERS and count > 1 and not seed:  # the shipped cases: the catalogue runs once, not per file
                ex = get_exercise(name)
                known[name] = diagnose.signatures(ex, seed, ex.cases(seed))
        bar = None
        if progress:
            try:
                from tqdm import tqdm
                bar = tqdm(total=len(entries), desc="grading", unit="file", file=sys.stderr)
            except ImportError:
                pass
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(_grade_one, e, exercise, options, known, only) for e in entries]
            reports = []
            for future in futures:
                reports.append(future.result())
                if bar is not None:
                    bar.update(1)
        if bar is not None:
            bar.close()
    for name in {r.exercise for r in reports}:
        flagged = similar.groups({r.source: r.fingerprint for r in reports if r.exercise == name and not r.error})
        for r in reports:
            if r.exercise == name:
                r.similar = flagged.get(r.source, "")
    return reports
