"""Sphinx extension: the exercises in the order the course meets them, not in file-name order.

The course meets its exercises in the order of `exercises.COURSE` (ex02 after lesson 01, then ex01,
...), which is not the order of their folders' names. The home page's Exercises toctree lists them
with one glob line, `exercises/*/README`; this rewrites that line, in memory, into one entry per
exercise in course order, followed by any exercise folder the table does not list yet (in file-name
order, so a new folder still gets a page before its line in COURSE is written).

    >>> ordered(["exercises/*/README"], ["ex02_softmax", "ex01_verify"], ["ex01_verify", "ex02_softmax", "ex07_new"])
    ['exercises/ex02_softmax/README', 'exercises/ex01_verify/README', 'exercises/ex07_new/README']
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GLOB = "exercises/*/README"


def course_folders():
    """The exercise folders of `exercises.COURSE`, in course order, read from exercises/__init__.py
    (parsed, not imported: the site's build does not run the course's code for its page order)."""
    tree = ast.parse((REPO / "exercises" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COURSE" for t in node.targets):
            return [folder for _, folder, _ in ast.literal_eval(node.value)]
    raise ValueError("exercises/__init__.py defines no COURSE table")


def ordered(lines, course, present):
    """`lines` with the line GLOB replaced by one entry per folder: those of `course` that are
    `present`, in course order, then the other `present` ones, in file-name order."""
    folders = [f for f in course if f in present] + sorted(f for f in present if f not in course)
    out = []
    for line in lines:
        out += [f"exercises/{folder}/README" for folder in folders] if line.strip() == GLOB else [line]
    return out


def _source_read(app, docname, source):
    if docname != app.config.root_doc:
        return
    present = [doc.split("/")[1] for doc in app.env.found_docs
               if doc.startswith("exercises/") and doc.endswith("/README") and doc.count("/") == 2]
    source[0] = "\n".join(ordered(source[0].split("\n"), course_folders(), present))


def setup(app):
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
