"""The instructor's gradebook: one row per graded entry, never lost on a regrade, merged across exercises.

A batch writes (or updates) one CSV per exercise:

    student, file, exercise, score, max_score, bonus, total, status, diagnosis, error, similar,
    seed_fingerprint, grader_version, timestamp, then one column per case (1 passed, 0 failed)

A regrade into an existing gradebook replaces the rows of the entries it graded again (same student
and file) and keeps every other row; a gradebook of another exercise is refused and left untouched.
The file is replaced in one step (written beside it, then renamed), so it is never half written.
The seed itself is never written, only `seed_fingerprint(seed)`: enough to see that two gradebooks
used the same secret, not to rebuild the hidden cases. Learner text goes through `report.csv_cell`;
case names become headers with commas and quotes replaced, so any CSV reader splits them the same way.

`merge` joins several exercises' gradebooks into one table, a row per student and a column per
exercise (its total), in the layout an LMS imports (`LAYOUTS`):
- canvas: `Student, ID, SIS User ID, SIS Login ID, Section`, then one column per exercise. Canvas
  matches rows on ID (the user id in its submission file names); an unknown column name becomes a
  new assignment, so name columns as the assignments are named in Canvas.
- moodle: `Identifier` (Moodle's "Participant N", from the participant id in its bulk download's
  folder names), `Full name`, then one column per exercise: the columns the assignment's grading
  worksheet upload reads (map a column to the assignment's grade when importing).
- plain: `student`, then one column per exercise.

    >>> seed_fingerprint(271828) == seed_fingerprint(271828) != seed_fingerprint(271829)
    True
    >>> header_name("beta, exact: 1/2")
    'beta; exact: 1/2'
"""

import csv
import datetime
import hashlib
import io
import json
import os
import tempfile

from .report import clean, csv_cell

VERSION = "specdec-grader 2"  # bump when a change to the engine or to an exercise's cases changes scores
FIELDS = ("student", "file", "exercise", "score", "max_score", "bonus", "total", "status", "diagnosis", "error",
          "similar", "seed_fingerprint", "grader_version", "timestamp")
LAYOUTS = {"canvas": ("Student", "ID", "SIS User ID", "SIS Login ID", "Section"),
           "moodle": ("Identifier", "Full name"), "plain": ("student",)}


def seed_fingerprint(seed):
    """12 hex digits of a hash of the secret: equal for equal seeds, no way back to the seed or the cases."""
    return hashlib.sha256(f"specdec-grade-seed:{int(seed)}".encode()).hexdigest()[:12]


def header_name(case_name):
    """A case name as a CSV header: one printable line with no comma or double quote."""
    return clean(case_name, 120).replace(",", ";").replace('"', "'")


def rows(reports, seed, when=None):
    """(header, rows as dicts) for these reports, each with its student id (`report.student`)."""
    when = when or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    cases = []
    for r in reports:
        for c in r.cases:
            name = header_name(c.name if len({x.exercise for x in reports}) == 1 else f"{r.exercise}: {c.name}")
            if name not in cases:
                cases.append(name)
    out = []
    for r in reports:
        passed = {header_name(c.name if len({x.exercise for x in reports}) == 1 else f"{r.exercise}: {c.name}"):
                  int(c.passed) for c in r.cases}
        row = {"student": csv_cell(r.student or r.source, 200), "file": csv_cell(r.source, 2000),
               "exercise": r.exercise, "score": r.score, "max_score": r.max_score, "bonus": r.bonus,
               "total": r.score + r.bonus, "status": r.status, "diagnosis": csv_cell(r.diagnosis, 400),
               "error": csv_cell(r.error), "similar": csv_cell(r.similar, 200),
               "seed_fingerprint": seed_fingerprint(seed), "grader_version": VERSION, "timestamp": when}
        row.update({name: passed.get(name, "") for name in cases})
        out.append(row)
    return list(FIELDS) + cases, out


def read(path):
    """(header, rows) of an existing gradebook CSV; ValueError if it is not one."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        if list(header[:len(FIELDS)]) != list(FIELDS):
            raise ValueError(f"{path} is not a gradebook this grader wrote (its first columns are not "
                             f"{', '.join(FIELDS[:3])}, ...): not touched; write to another file")
        return list(header), list(reader)


def update(path, reports, seed):
    """Write `reports` into the gradebook at `path`, keeping the rows of every entry not regraded.

    Returns (rows written, rows kept from before, rows of the old file graded with another seed).
    """
    header, new = rows(reports, seed)
    kept, other_seed = [], 0
    if os.path.exists(path) and os.path.getsize(path) > 0:
        old_header, old = read(path)
        exercises = {r["exercise"] for r in old} | {r["exercise"] for r in new}
        if len(exercises) > 1 and len({r["exercise"] for r in old}) == 1 and len({r["exercise"] for r in new}) == 1:
            raise ValueError(f"{path} holds grades of {old[0]['exercise']}, not {new[0]['exercise']}: "
                             "not touched; one gradebook per exercise (merge them with `gradebook`)")
        regraded = {(r["student"], r["file"]) for r in new}
        kept = [r for r in old if (r["student"], r["file"]) not in regraded]
        other_seed = sum(r["seed_fingerprint"] != new[0]["seed_fingerprint"] for r in kept) if new else 0
        header = header + [h for h in old_header if h not in header]
    every = sorted(kept + new, key=lambda r: (r["student"], r["file"]))
    _replace(path, header, every)
    return len(new), len(kept), other_seed


def _replace(path, header, table):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".gradebook-", suffix=".csv", dir=folder)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=header, restval="", extrasaction="ignore")
            writer.writeheader()
            writer.writerows(table)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def to_json(reports, seed):
    """The gradebook as one JSON document (what `--batch --json` prints)."""
    header, table = rows(reports, seed)
    return json.dumps({"grader_version": VERSION, "seed_fingerprint": seed_fingerprint(seed), "columns": header,
                       "rows": table})


def merge(paths, layout="plain"):
    """One CSV text: a row per student, a column per exercise holding its total, from several gradebooks."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout is {layout!r}; choose one of {', '.join(LAYOUTS)}")
    totals, names, exercises = {}, {}, []
    for path in paths:
        _, table = read(path)
        for r in table:
            if r["exercise"] not in exercises:
                exercises.append(r["exercise"])
            best = totals.setdefault(r["student"], {})
            value = int(r["total"]) if r["total"].lstrip("-").isdigit() else 0
            best[r["exercise"]] = max(value, best.get(r["exercise"], 0))   # two files of one student: the better
            names.setdefault(r["student"], r["file"])
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(list(LAYOUTS[layout]) + exercises)
    for student in sorted(totals):
        marks = [totals[student].get(e, "") for e in exercises]
        if layout == "canvas":
            writer.writerow([student, student, "", "", ""] + marks)
        elif layout == "moodle":
            writer.writerow([f"Participant {student}", student] + marks)
        else:
            writer.writerow([student] + marks)
    return out.getvalue()
