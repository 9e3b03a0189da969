"""Per-student feedback from a batch: what each learner may see of their grade, as text and as a web page.

`write(reports, folder)` writes, for every graded entry, `NAME.txt` (the report's table) and
`NAME.html` (a page holding the report's HTML table), NAME made from the student id and the file
so that it is safe on any file system and unique in the folder, plus `index.csv` mapping each
student and file to their two feedback files (for mail merges or an LMS upload). Only what the
learner's own report shows goes in: failed public cases with their input, hidden cases with a
hint, the diagnosis; never the seed, the seed's fingerprint, the hidden cases' inputs or answers,
or anything about another learner (not even the similarity flag, which is the instructor's).

    >>> safe_name("1234", "ex01 alice's/../file.py")
    '1234__ex01_alice_s_.._file.py'
"""

import csv
import html
import os
import re

from .report import clean, csv_cell

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }}
table {{ border-collapse: collapse; width: 100%; }} td, th {{ padding: 0.3rem 0.5rem; border-bottom: 1px solid #ddd;
vertical-align: top; }} code {{ white-space: pre-wrap; word-break: break-word; }}</style></head>
<body><h1>{title}</h1>
{body}
<p>Hidden cases (marked hidden) show a hint when they fail, never their expected answer.</p>
</body></html>
"""


def safe_name(student, source):
    """A file name made of the student id and the file's name: [A-Za-z0-9._-] only, at most 150 characters."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{student}__{source}").strip("._") or "submission"
    return stem[:150]


def learner_copy(report):
    """The report as the learner sees it: no similarity flag (that is the instructor's) and no fingerprint."""
    import copy
    mine = copy.copy(report)
    mine.similar, mine.fingerprint = "", ()
    return mine


def write(reports, folder):
    """Write NAME.txt and NAME.html per report, and index.csv; return the paths written."""
    os.makedirs(folder, exist_ok=True)
    written, used, index = [], set(), []
    for r in reports:
        name = safe_name(r.student or "", r.source)
        base, n = name, 1
        while name in used:
            n += 1
            name = f"{base}_{n}"
        used.add(name)
        mine = learner_copy(r)
        title = html.escape(clean(f"{r.exercise} {r.title}: {r.source}", 300))
        for path, text in ((os.path.join(folder, name + ".txt"), mine.table() + "\n"),
                           (os.path.join(folder, name + ".html"), PAGE.format(title=title, body=mine._repr_html_()))):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            written.append(path)
        index.append((csv_cell(r.student, 200), csv_cell(r.source, 2000), name + ".txt", name + ".html"))
    path = os.path.join(folder, "index.csv")
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "file", "text", "html"])
        writer.writerows(index)
    return written + [path]
