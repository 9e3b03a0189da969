"""The instructor's gradebook: one row per student and exercise, a term's resubmissions in it, merged for an LMS.

A batch writes (or updates) one CSV per exercise:

    student, name, exercise, final, score, max_score, bonus, total, late, penalty, status, file, files,
    diagnosis, error, similar, seconds, lms, seed_fingerprint, grader_version, timestamp, history,
    then one column per case (1 passed, 0 failed)

`final` is what counts: the total (score plus bonus) less a late row's penalty; it is empty when the file was
**not graded** (status `not graded`: a .txt, an empty folder, a file the machine could not run), which is
not a 0. `file` is the file that counts, `files` every file the student handed in and what became of it,
`history` (JSON) every file graded for this row across batches, so that a regrade after resubmissions applies
the policy (`batch.POLICIES`: latest, latest on time, best) to the whole term: a later upload never silently
replaces an on-time grade under `latest-on-time`, and `best` keeps the best of every batch. Regrading the same
file replaces its entry. A gradebook of another exercise is refused and left untouched. The file is replaced
in one step (written beside it, then renamed), so it is never half written. The seed itself is never
written, only `seed_fingerprint(seed)`: enough to see that two gradebooks used the same secret, not to rebuild
the hidden cases. Learner text goes through `report.csv_cell`; case names become headers with commas and
quotes replaced, so any CSV reader splits them the same way.

`merge` joins several exercises' gradebooks into one table, a row per student and a column per
exercise (its final), in the layout an LMS imports (`LAYOUTS`):
- canvas: `Student, ID, SIS User ID, SIS Login ID, Section`, then one column per exercise. Canvas
  matches rows on ID (the user id in its submission file names); an unknown column name becomes a
  new assignment, so name columns as the assignments are named in Canvas.
- moodle: `Identifier` (Moodle's "Participant N", from the participant id in its bulk download's
  folder names), `Full name` (from the same folder names), then one column per exercise: the columns the
  assignment's grading worksheet upload reads (map a column to the assignment's grade when importing).
- plain: `student`, then one column per exercise.
A cell of a row that was not graded is left empty (the LMS keeps what it had), and the merge warns: about
those rows, and about rows whose ids came from another LMS than the layout's (a Moodle participant id is not a
Canvas user id).

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

VERSION = "specdec-grader 3"  # bump when a change to the engine or to an exercise's cases changes scores
FIELDS = ("student", "name", "exercise", "final", "score", "max_score", "bonus", "total", "late", "penalty", "status",
          "file", "files", "diagnosis", "error", "similar", "seconds", "lms", "seed_fingerprint", "grader_version",
          "timestamp", "history")
LAYOUTS = {"canvas": ("Student", "ID", "SIS User ID", "SIS Login ID", "Section"),
           "moodle": ("Identifier", "Full name"), "plain": ("student",)}
NOT_GRADED = "not graded"
ENTRY = ("file", "final", "score", "max_score", "bonus", "total", "late", "penalty", "status", "diagnosis", "error",
         "seconds", "seed_fingerprint", "grader_version", "timestamp")   # what a history entry keeps of its row


def seed_fingerprint(seed):
    """12 hex digits of a hash of the secret: equal for equal seeds, no way back to the seed or the cases."""
    return hashlib.sha256(f"specdec-grade-seed:{int(seed)}".encode()).hexdigest()[:12]


def header_name(case_name):
    """A case name as a CSV header: one printable line with no comma or double quote."""
    return clean(case_name, 120).replace(",", ";").replace('"', "'")


def _number(value):
    return "" if value is None else value


def rows(reports, seed, when=None):
    """(header, rows as dicts) for these reports, each with its row's student id (`report.student`)."""
    when = when or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    several = len({r.exercise for r in reports}) > 1
    names = lambda r, c: header_name(f"{r.exercise}: {c.name}" if several else c.name)
    cases = []
    for r in reports:
        for c in r.cases:
            if names(r, c) not in cases:
                cases.append(names(r, c))
    out = []
    for r in reports:
        graded = r.status != "error"
        row = {"student": csv_cell(r.student or r.source, 200), "name": csv_cell(r.person, 200),
               "exercise": r.exercise, "final": _number(r.final), "score": r.score if graded else "",
               "max_score": r.max_score, "bonus": r.bonus if graded else "",
               "total": r.score + r.bonus if graded else "", "late": "yes" if r.late else "",
               "penalty": r.penalty if r.late and r.penalty else "", "status": r.status if graded else NOT_GRADED,
               "file": csv_cell(r.source, 2000), "files": csv_cell("; ".join(r.files), 4000),
               "diagnosis": csv_cell(r.diagnosis, 400), "error": csv_cell(r.error), "similar": csv_cell(r.similar, 200),
               "seconds": round(r.seconds, 2), "lms": r.lms, "seed_fingerprint": seed_fingerprint(seed),
               "grader_version": VERSION, "timestamp": when}
        row.update({name: "" for name in cases})
        row.update({names(r, c): int(c.passed) for c in r.cases} if graded else {})
        row["history"] = json.dumps([_entry(row, cases)])
        out.append(row)
    return list(FIELDS) + cases, out


def _entry(row, cases):
    """A row's history entry: what it keeps of the row, and its cases (so that it can count again later)."""
    return {**{k: row.get(k, "") for k in ENTRY}, "cases": {c: row.get(c, "") for c in cases if row.get(c, "") != ""}}


def _cell(row, name):
    """A cell of a CSV row as text, "" where the row is short (csv.DictReader gives None there)."""
    value = row.get(name)
    return value if isinstance(value, str) else ""


def read(path):
    """(header, rows) of an existing gradebook CSV; ValueError if it is not one (or cannot be read as one)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = list(reader.fieldnames or [])
            if header[:len(FIELDS)] != list(FIELDS):
                raise ValueError(f"{path} is not a gradebook this grader wrote (its first columns are not "
                                 f"{', '.join(FIELDS[:3])}, ...): not touched; write to another file")
            table = [{k: _cell(r, k) for k in header} for r in reader]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path} is not a gradebook this grader wrote ({type(exc).__name__}): not touched") from None
    return header, table


def _history(row):
    try:
        entries = json.loads(row.get("history") or "[]")
    except ValueError:
        return []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("file"), str)]


def _final(entry):
    try:
        return float(entry.get("final"))
    except (TypeError, ValueError):
        return None


def counted(history, policy):
    """The history entry that counts under `policy` (oldest first in `history`); graded ones before not graded.

    >>> h = [{"file": "a", "final": 90, "late": ""}, {"file": "b", "final": 100, "late": "yes"}]
    >>> [counted(h, p)["file"] for p in ("latest", "latest-on-time", "best")]
    ['b', 'a', 'b']
    """
    graded = [e for e in history if _final(e) is not None] or history
    if policy == "best":
        return max(reversed(graded), key=lambda e: _final(e) if _final(e) is not None else -1)
    if policy == "latest-on-time":
        return ([e for e in graded if not e.get("late")] or graded)[-1]
    return graded[-1]


def update(path, reports, seed, policy="latest"):
    """Write `reports` into the gradebook at `path`: one row per student and exercise, the policy applied over
    each row's history (this batch's file added to what earlier batches graded).

    Returns (rows written, rows kept from before, rows kept that were graded with another seed).
    """
    header, new = rows(reports, seed)
    kept, other_seed = [], 0
    if os.path.exists(path) and os.path.getsize(path) > 0:
        old_header, old = read(path)
        exercises = {r["exercise"] for r in old} | {r["exercise"] for r in new}
        if len(exercises) > 1 and len({r["exercise"] for r in old}) == 1 and len({r["exercise"] for r in new}) == 1:
            raise ValueError(f"{path} holds grades of {old[0]['exercise']}, not {new[0]['exercise']}: "
                             "not touched; one gradebook per exercise (merge them with `gradebook`)")
        before = {(r["student"], r["exercise"]): r for r in old}
        header = header + [h for h in old_header if h not in header]
        new = [_merged(before.get((r["student"], r["exercise"])), r, header, policy) for r in new]
        regraded = {(r["student"], r["exercise"]) for r in new}
        kept = [r for r in old if (r["student"], r["exercise"]) not in regraded]
        other_seed = sum(r["seed_fingerprint"] != new[0]["seed_fingerprint"] for r in kept) if new else 0
    every = sorted(kept + new, key=lambda r: (r["student"], r["exercise"]))
    _replace(path, header, every)
    return len(new), len(kept), other_seed


def _merged(old, row, header, policy):
    """`row` (this batch's) with the history of `old` (the row the gradebook had), the policy's entry counted."""
    if old is None:
        return row
    cases = [h for h in header if h not in FIELDS]
    mine = _history(row)[0]
    history = [e for e in _history(old) if e["file"] != mine["file"]] + [mine]
    entry = counted(history, policy)
    out = dict(row, history=json.dumps(history))
    listed = row["files"].split("; ")   # "name: what became of it", this batch's
    if entry is not mine:   # an earlier file counts: its columns, with this batch's view of the student
        out.update({k: entry.get(k, "") for k in ENTRY})
        out.update({c: entry.get("cases", {}).get(c, "") for c in cases})
        score = NOT_GRADED if _final(mine) is None else mine["final"]
        listed = [f"{mine['file']}: graded, {score} (not counted: {policy})"
                  if line == f"{mine['file']}: counted" else line for line in listed]
    seen = [e for e in history if not any(line.startswith(e["file"] + ": ") for line in listed)]
    if seen:
        out["files"] = csv_cell("; ".join(listed + [f"{e['file']}: graded in an earlier batch" +
                                                    (", counted" if e is entry else "") for e in seen]), 4000)
    elif entry is not mine:
        out["files"] = csv_cell("; ".join(listed), 4000)
    return out


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
    for row in table:
        row["history"] = json.loads(row["history"])
    return json.dumps({"grader_version": VERSION, "seed_fingerprint": seed_fingerprint(seed), "columns": header,
                       "rows": table})


def merge(paths, layout="plain"):
    """(CSV text, warnings): a row per student, a column per exercise holding its final, from several gradebooks.

    A row that was not graded leaves its cell empty (and is warned about), never 0.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout is {layout!r}; choose one of {', '.join(LAYOUTS)}")
    finals, names, exercises, warnings, sources = {}, {}, [], [], {}
    for path in paths:
        _, table = read(path)
        for r in table:
            student, exercise = r["student"], r["exercise"]
            if exercise not in exercises:
                exercises.append(exercise)
            if exercise in finals.setdefault(student, {}):
                warnings.append(f"{student} has two rows for {exercise} ({path} is one): the later file's is used")
            finals[student][exercise] = r["final"]
            if r["status"] == NOT_GRADED:
                warnings.append(f"{student}, {exercise}: not graded ({clean(r['error'], 120)}): left empty")
            if r["name"]:
                names[student] = r["name"]
            if r["lms"]:
                sources.setdefault(r["lms"], set()).add(student)
    wanted = {"canvas": "canvas", "moodle": "moodle"}.get(layout)
    for lms, students in sorted(sources.items()):
        if wanted and lms != wanted and lms != "pattern":
            warnings.append(f"{len(students)} students' ids come from {lms} names, not {layout}'s: "
                            f"{layout} will not match them ({', '.join(sorted(students)[:3])} ...)")
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(list(LAYOUTS[layout]) + exercises)
    for student in sorted(finals):
        marks = [finals[student].get(e, "") for e in exercises]
        name = names.get(student, "")
        if layout == "canvas":
            writer.writerow([name or student, student, "", "", ""] + marks)
        elif layout == "moodle":
            writer.writerow([f"Participant {student}", name or student] + marks)
        else:
            writer.writerow([student] + marks)
    return out.getvalue(), warnings
