"""Grade a class: one row per student and exercise, whatever the class holds, each file in a process of its own.

The class is read by `intake.read_batch` (a folder or an LMS's zip download; every entry one student's upload),
and each upload's files by `intake.choose` (at most one file per exercise). A student may hand in several
uploads (Canvas's attachments, a resubmission under a new name): which one counts is a stated policy
(`POLICIES`): the latest (default), the latest on time, or the best; with `due` (a time.time() value) an
upload after it is late, as is one the LMS marks late (Canvas's `_LATE_`), and `late_penalty` percent comes off
a late row's total. Every file the student handed in is listed in their row (`Report.files`).

Each file is graded by `grade_file` from its private copy, in its own sandboxes with their own time limits,
and in a grading process of its own (`grade_apart`): that process parses what the sandbox sends back, reads
the notebook, judges. So nothing a file does (a reply that takes seconds to parse, a notebook that keeps
IPython busy, a crash of the grader's own code) can slow, starve or kill the grading of another file. The
grading process's own work is bounded in CPU time (GRADER_CPU), never in wall time, which a busy machine
stretches (issue 25: on a loaded machine 11 of 20 honest ex04 files were "stopped" after 212 s of wall time).
A file that a time limit stopped, or that the machine could not run, is graded again alone, with nothing
else running, before its row is believed (`Report.regraded`). In a batch no two submissions' sandboxes run
at once (`session._Lock`). The gradebook (`gradebook.py`) and the feedback files (`feedback.py`) are written
by this process alone, after every sandbox is gone.

    >>> sorted(POLICIES)
    ['best', 'latest', 'latest-on-time']
"""

import os
import pickle
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from . import diagnose, intake, similar, verdict
from .registry import FOLDERS, exercise as get_exercise
from .report import Report, label

GRADER_CPU = 120.0   # CPU seconds a grading process may spend on its own work (honest files: a few)
POLL = 1.0           # seconds between two looks at a grading process
HOST_WALL = 3600.0   # wall seconds after which a grading process is given up as the machine's doing
GRADING_MEMORY = 3 * 1024 ** 3  # the grading process's address space (honest files: under 400 MB)
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICIES = {"latest": "the latest upload counts", "latest-on-time": "the latest upload before the due date counts "
            "(the latest of all, marked late, if none was on time)", "best": "the best-scoring upload counts"}
BEST_OF = 5   # `best`: the newest uploads graded, at most


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
    from .submission import grade_file
    try:
        result = ("report", grade_file(path, exercise, **options))
    except ValueError as exc:
        result = ("usage", str(exc))
    out.write(pickle.dumps(result))
    out.flush()


def _own_cpu(pid):
    """The CPU seconds process `pid` has spent itself (not its children: the sandboxes are the submission's)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def grade_apart(path, exercise, known=None, **options):
    """`grade_file(path, exercise, **options)` in a grading process of its own; a Report whatever happens to it.

    `known`: the exercise's signatures for this seed (`diagnose.signatures`), if the caller has them: the
    grading process then need not run the catalogue of mistakes again. Raises ValueError for the grader's own
    usage errors, as grade_file does.
    """
    code = f"import sys; sys.path.insert(0, {PACKAGE_ROOT!r}); from grader.batch import _child; _child()"
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    message = pickle.dumps((path, exercise, options, known))
    why = ""
    while True:
        try:
            out, err = proc.communicate(message, timeout=POLL)
            break
        except subprocess.TimeoutExpired:
            message = None   # sent with the first call
            if _own_cpu(proc.pid) > GRADER_CPU:
                why = (f"the grader's own work on this file took more than {GRADER_CPU:g} s of CPU time and was "
                       "stopped (replies that take long to judge?)")
            elif time.monotonic() - started > HOST_WALL:
                why = (f"the machine was too busy to grade this file within {HOST_WALL:g} s (the host's doing, not "
                       "the file's): regrade it")
            if why:
                proc.kill()  # its sandboxes die with it (bwrap --die-with-parent)
                proc.communicate()
                report = _not_graded(exercise, options, why, options.get("display") or path)
                report.stopped, report.host = 1, "busy" in why
                return report
    if proc.returncode == 0 and out:
        kind, value = pickle.loads(out)  # from our own grading process: the submission never writes there
        if kind == "usage":
            raise ValueError(value)
        return value
    last = (err.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
    return _not_graded(exercise, options, f"the grading process failed (exit code {proc.returncode}): {last}",
                       options.get("display") or path)


def grade_settled(path, exercise, known=None, **options):
    """`grade_apart`, and once more if a time limit stopped the file or the machine could not run it: the
    second grading is the one kept (`Report.regraded`)."""
    report = grade_apart(path, exercise, known, **options)
    if report.stopped or report.host:
        report = grade_apart(path, exercise, known, **options)
        report.regraded = True
    return host_verdict(report)


def host_verdict(report):
    """A report the machine still could not finish after its regrade is not graded (its final is empty, never a
    low score): the host's doing is never the file's."""
    if report.host and not report.error:
        report.error = ("the machine was too busy to run some of its cases, twice (the host's doing, not the "
                        "file's): not graded; regrade it on a quieter machine")
    return report


def _not_graded(exercise, options, why, display=""):
    """The row of a file that was not graded: its exercise's cases all failed, or no cases if it has none."""
    if exercise not in FOLDERS:
        return Report(exercise or "", "", [], 0, error=why, source=display)
    ex, seed = get_exercise(exercise), options.get("seed", 0)
    return verdict.not_run(ex, seed, ex.cases(seed), why, source=display)


def _is_late(upload, due):
    return upload.late or (due is not None and upload.submitted > due)


@dataclass
class Row:
    """One row of a class: a student and an exercise, what to grade for it, and every file listed."""
    student: str
    exercise: str
    graded: list                  # [(Upload, File, late)] the policy needs graded, oldest first
    files: list                   # lines: every other file the student handed in, and why it was not graded
    problem: str = ""             # why there is nothing to grade ("" when there is)
    uploads: list = field(default_factory=list)


def plan(uploads, exercise=None, policy="latest", due=None):
    """The rows of a class (`Row`): one per student and exercise; the files to grade are those the policy needs
    (`POLICIES`), every other file of the student is listed with why it is not graded.

    Several uploads under one id are one student's only when an LMS named them so (Canvas's attachments of one
    user id, Moodle's folders of one participant): two plain files that give one id (`alice.py`, `alice.ipynb`)
    are a collision, and the row says so rather than merge them.
    """
    if policy not in POLICIES:
        raise ValueError(f"--policy {policy!r}: choose one of {', '.join(POLICIES)}")
    students = {}
    for upload in uploads:
        students.setdefault(upload.student, []).append(upload)
    for student, mine in students.items():   # one id for two uploads is one student only when an LMS says so
        if len(mine) > 1 and (len({u.lms for u in mine}) > 1 or mine[0].lms in ("plain", "pattern")):
            why = (f"{len(mine)} uploads have the id {student} ({', '.join(u.name for u in mine[:4])}) and no LMS "
                   "says they are one student's: rename them, or pass --student-pattern")
            for u in mine:
                u.problem, u.files = why, []
    chosen = {id(u): intake.choose(u, exercise) for u in uploads}
    named = {name for c in chosen.values() for name in c if name}
    only = exercise or (next(iter(named)) if len(named) == 1 else "")
    rows = []
    for student, mine in students.items():
        mine.sort(key=lambda u: u.recency)
        attempts, listed = {}, []
        for upload in mine:
            for name, (file, rest) in chosen[id(upload)].items():
                attempts.setdefault(name, []).append((upload, file, _is_late(upload, due)))
                listed += [f"{r.name}: another file of the same upload (not graded)" for r in rest]
            listed += [f"{n}: {why}" for n, why in upload.others if (n, why) != (upload.name, upload.problem)]
            if upload.problem:
                listed.append(f"{upload.name}: {upload.problem}")
        unknown = attempts.pop(None, [])
        listed += [f"{f.name}: cannot tell its exercise from its name (pass --exercise)" for _, f, _ in unknown]
        for name, tries in attempts.items():
            graded = tries[-1:] if policy == "latest" else \
                ([t for t in tries if not t[2]] or tries)[-1:] if policy == "latest-on-time" else tries[-BEST_OF:]
            left = [f"{f.name}: an earlier upload (not graded: {policy})" for u, f, _ in tries
                    if not any(f is g[1] for g in graded)]
            rows.append(Row(student, name, graded, left + listed, "", mine))
        if not attempts:
            problem = next((u.problem for u in mine if u.problem), "") or \
                ("cannot tell the exercise from the file name (no exNN in it): pass --exercise" if unknown
                 else "nothing to grade")
            guess = next((intake.exercise_of(u.name) for u in mine if intake.exercise_of(u.name)), None)
            rows.append(Row(student, exercise or (guess if guess in FOLDERS else only), [], listed, problem, mine))
    return sorted(rows, key=lambda r: (r.student, r.exercise or ""))


def grade_folder(folder, exercise=None, jobs=2, progress=True, pattern=None, policy="latest", due=None,
                 late_penalty=0.0, **options):
    """Reports for every row of the class in `folder` (a folder or an LMS's zip), sorted by student and exercise.

    `options` go to grade_file. Each report carries its row: `student`, `person`, `lms`, `late`, `penalty`,
    `files` (every file the student handed in, and why each was or was not graded). Similar files are flagged
    (`report.similar`) among the counted files of one exercise.
    """
    if exercise:
        get_exercise(exercise)  # an unknown exercise: the command's error, before any work
    with tempfile.TemporaryDirectory(prefix="specdec-batch-") as work:
        uploads = intake.read_batch(folder, os.path.join(work, "uploads"), pattern)
        rows = plan(uploads, exercise, policy, due)
        seed, known = options.get("seed", 0), {}
        for name in {r.exercise for r in rows if r.graded}:   # once per class: every file has the same cases
            ex = get_exercise(name)
            known[name] = diagnose.signatures(ex, seed, ex.cases(seed))
        jobs_list = [(i, u, f, late) for i, row in enumerate(rows) for (u, f, late) in row.graded]
        lock = os.path.join(work, "sandbox.lock")
        bar = _bar(len(jobs_list)) if progress else None

        def grade(job, alone=False):
            i, upload, file, late = job
            report = grade_apart(file.path, rows[i].exercise, known.get(rows[i].exercise), display=file.name,
                                 lock=None if alone else lock, **options)
            if bar is not None and not alone:
                bar.update(1)
            return report
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            graded = list(pool.map(grade, jobs_list))
        if bar is not None:
            bar.close()
        for k, job in enumerate(jobs_list):   # stopped by a limit, or not run by the machine: again, alone
            if graded[k].stopped or graded[k].host:
                graded[k] = host_verdict(grade(job, alone=True))
                graded[k].regraded = True
    by_row = {}
    for (i, upload, file, late), report in zip(jobs_list, graded):
        report.late, report.penalty = late, late_penalty if late else 0.0
        by_row.setdefault(i, []).append((upload, file, report))
    reports = [_row_report(row, by_row.get(i, []), options, policy) for i, row in enumerate(rows)]
    for name in {r.exercise for r in reports}:
        mine = [r for r in reports if r.exercise == name and not r.error]
        for r, flagged in zip(mine, similar.flag([(r.student, r.source, r.fingerprint) for r in mine])):
            r.similar = flagged
    return reports


def _row_report(row, graded, options, policy):
    """The report of one row: the counted file's (`policy`), with every file of the student listed."""
    if graded:
        # best: the newest of equal finals, as over a term's history (gradebook.counted)
        counted = max(reversed(graded), key=lambda g: -1 if g[2].final is None else g[2].final) \
            if policy == "best" else graded[-1]
        upload, file, report = counted
        others = [f"{f.name}: graded, {'not graded' if r.final is None else r.final} (not counted: {policy})"
                  for u, f, r in graded if r is not report]
        report.files = [f"{file.name}: counted"] + others + row.files
    else:
        report = _not_graded(row.exercise, options, row.problem, "")
        report.files = row.files
        report.source = row.uploads[-1].name if row.uploads else label(row.student)
    report.student = row.student
    report.person = next((u.person for u in reversed(row.uploads) if u.person), "")
    report.lms = row.uploads[-1].lms if row.uploads else ""
    return report


def _bar(total):
    try:
        from tqdm import tqdm
        return tqdm(total=total, desc="grading", unit="file", file=sys.stderr)
    except ImportError:
        return None
