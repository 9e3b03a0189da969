"""Grade a folder of submissions in parallel; one CSV row per file, whatever happens.

Each file is graded by `grade_file` from its own private copy (a symbolic link is refused), in its own
sandboxes with their own time limits, so a hanging, crashing or hostile file
costs only its own cases. Workers are threads: the work happens in the
sandboxes. The CSV is written by this process alone, after every sandbox is
gone. Every learner-controlled text in it goes through `report.csv_cell`.

CSV columns: file, score, max_score, bonus, plain_python, status (passed /
failed / error), diagnosis, message (why it could not be graded), then one
column per case holding 1 (passed) or 0.

    >>> import os
    >>> [os.path.basename(p) for p in submissions_in("tests/submissions/ex03")]
    ['wrong_no_clip.py', 'wrong_no_empty_fallback.py', 'wrong_no_length_check.py', 'wrong_not_normalized.py']
"""

import csv
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from . import verdict
from .registry import exercise as get_exercise
from .report import clean, csv_cell
from .submission import grade_file, infer_exercise


def submissions_in(folder):
    """The .py and .ipynb files directly in `folder`, sorted by name."""
    return sorted(os.path.join(folder, n) for n in os.listdir(folder)
                  if n.endswith((".py", ".ipynb")) and not n.startswith(".")
                  and (os.path.isfile(os.path.join(folder, n)) or os.path.islink(os.path.join(folder, n))))


def _grade_one(path, exercise, options):
    try:
        if os.path.islink(path):  # it could point at the course's solutions or at another learner's file
            raise ValueError("a symbolic link, not a file: refused (hand in the file itself)")
        return grade_file(path, exercise, **options)
    except Exception as exc:  # e.g. no exercise in the name: this row says so, the batch goes on
        ex = get_exercise(exercise or "ex01")
        seed = options.get("seed", 0)
        return verdict.not_run(ex, seed, ex.cases(seed), clean(str(exc) or type(exc).__name__),
                               source=clean(os.path.basename(path), 100))


def grade_folder(folder, exercise=None, jobs=2, progress=True, **options):
    """Reports for every submission in `folder`, in file-name order (`options` go to grade_file)."""
    paths = submissions_in(folder)
    bar = None
    if progress:
        try:
            from tqdm import tqdm
            bar = tqdm(total=len(paths), desc="grading", unit="file", file=sys.stderr)
        except ImportError:
            pass
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_grade_one, p, exercise or infer_exercise(p), options) for p in paths]
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
            writer.writerow([csv_cell(r.source), r.score, r.max_score, r.bonus,
                             "" if r.plain_python is None else int(bool(r.plain_python)), r.status,
                             csv_cell(r.diagnosis, 400), csv_cell(r.error)] + [passed.get(n, 0) for n in case_names])
