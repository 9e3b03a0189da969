"""Sphinx extension: each lesson's and exercise's reading time, under its title.

Counted by the build from the page itself: the words of its prose (formulas count as one word each)
at 200 words a minute, and the lines of its code at 10 lines a minute (code is read slowly, and a
learner runs it); outputs are not counted. Rounded up to whole minutes.

    >>> minutes(2000, 0), minutes(1990, 35), minutes(0, 0)
    (10, 14, 1)
"""

import math

from docutils import nodes

WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE = 200, 10
PAGES = ("notebooks/", "exercises/")


def minutes(words, code_lines):
    return max(1, math.ceil(words / WORDS_PER_MINUTE + code_lines / CODE_LINES_PER_MINUTE))


def _counts(node):
    """(words of prose, lines of code) under `node`, outputs, titles and raw HTML aside."""
    if isinstance(node, (nodes.title, nodes.raw, nodes.comment)) or (
            isinstance(node, nodes.Element) and "cell_output" in node["classes"]):
        return 0, 0
    if isinstance(node, nodes.literal_block):
        return 0, len(node.astext().strip().splitlines())
    if isinstance(node, (nodes.math, nodes.math_block)):
        return 1, 0
    if isinstance(node, nodes.Text):
        return len(node.split()), 0
    counts = [_counts(child) for child in node.children]
    return sum(w for w, _ in counts), sum(n for _, n in counts)


def _add(app, doctree, docname):
    if not docname.startswith(PAGES):
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not section.children or not isinstance(section[0], nodes.title):
        return
    words, lines = _counts(doctree)
    text = f"About {minutes(words, lines)} min to read ({words:,} words, {lines:,} lines of code)"
    section.insert(1, nodes.paragraph(text, text, classes=["reading-time"]))


def setup(app):
    app.connect("doctree-resolved", _add)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
