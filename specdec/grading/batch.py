"""Grade a folder of submissions in parallel and write one CSV row per file.

Each submission is graded by `grade_file`, in its own child processes with
their own time limits, so a hanging or crashing submission costs only its
own cases. Workers are threads: the work happens in the child processes.

CSV columns: file, score, max_score, bonus, plain_python, status
(passed / failed / error), message (why it could not be graded), then one
column per case holding 1 (passed) or 0.
"""

import csv
import os
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed

from .cases import exercise as get_exercise
from .report import build_report
from .submission import grade_file, infer_exercise


def submissions_in(folder):
    """The .py and .ipynb files directly in `folder`, sorted by name."""
    return sorted(os.path.join(folder, n) for n in os.listdir(folder)
                  if n.endswith((".py", ".ipynb")) and not n.startswith("."))


def _grade_one(path, exercise, timeout):
    try:
        return grade_file(path, exercise, timeout)
    except Exception as exc:  # e.g. no exercise in the name: this row says so, the batch goes on
        ex = get_exercise(exercise or "ex01")
        return build_report(ex, [None] * len(ex.cases), error=str(exc) or type(exc).__name__, source=path)


def grade_folder(folder, exercise=None, timeout=10.0, jobs=2, progress=True):
    """Reports for every submission in `folder`, in file-name order."""
    paths = submissions_in(folder)
    bar = None
    if progress:
        try:
            from tqdm import tqdm
            bar = tqdm(total=len(paths), desc="grading", unit="file", file=sys.stderr)
        except ImportError:
            bar = None
    reports = [None] * len(paths)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(_grade_one, p, exercise or infer_exercise(p), timeout): i
                   for i, p in enumerate(paths)}
        for future in as_completed(futures):
            reports[futures[future]] = future.result()
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
        writer.writerow(["file", "score", "max_score", "bonus", "plain_python", "status", "message"] + case_names)
        for r in reports:
            passed = {c.name: int(c.passed) for c in r.cases}
            writer.writerow([os.path.basename(r.source), r.score, r.max_score, r.bonus,
                             "" if r.plain_python is None else int(bool(r.plain_python)), r.status, r.error]
                            + [passed.get(n, 0) for n in case_names])
