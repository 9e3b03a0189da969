"""A notebook submission as the Python script its kernel would run, minus the grader's own check.

Each code cell goes through IPython's own input transformer (the one a kernel
uses), so `%time`, `!pip ...`, `%%time` cells and continuation lines mean what
they mean in Jupyter. The transformed magics call `get_ipython()`, which the
script defines as a small stand-in: `%time`/`%timeit`/`%prun`/`%%time`/`%%capture`
run their code once (after their options, read as IPython reads them: `%timeit -n 10 f()`
runs `f()`; `%%timeit`'s line is setup code, run first), every other magic and shell line
does nothing. Dropped:
top-level statements that import `grader` (or `specdec.grading`, as earlier handouts did) or call `check(...)` (the
check cell), found in each cell's syntax tree, so a comment that mentions the
grader changes nothing. A cell that does not parse is kept: the grader then
reports its SyntaxError with the cell and line.

The notebook is hostile input read by the grading process, so the work is
bounded: JSON nested too deeply, or with more than MAX_VALUES values (counted on its text before it is
parsed: 32 MiB of `[],` would take 830 MB of lists), is a NotebookError; IPython reads a whole cell
again for each magic it rewrites (up to 500 times), so a cell is transformed
only when (its characters) x (its places that could hold a magic) is at most
MAX_TRANSFORM (well under a second; an honest cell is far below it; one above
is kept as written, and a magic in it is then a SyntaxError), and only until
`deadline`.

    >>> script, where = notebook_to_script('{"cells": [{"cell_type": "code", "source": "%time x = 1\\\\ny = x"}]}')
    >>> script.splitlines()[where.index((1, 2))]
    'y = x'
"""

import ast
import json
import re
import time
import warnings

MAX_TRANSFORM = 250_000  # characters x possible magics: about 0.5 s of IPython at worst
MAX_VALUES = 1_000_000  # an upper bound on a notebook's JSON values; honest notebooks hold a few thousand
# What IPython rewrites one at a time: an escape starting a line (%time, !ls, ?x, /f x), x = %magic or
# x = !cmd, a line ending in ?. A superset: `x % 2` or `a != b` are not counted, `/` at a line start is.
MAGIC = re.compile(r"^[ \t]*[%!?/,;]|=[ \t]*[%!]|\?[ \t]*$", re.MULTILINE)

PRELUDE = '''\
def _statement(line, takes):
    """The code after a magic's options; takes: IPython's option letters, ':' after those that take a value."""
    rest = line.strip()
    while rest.startswith("-") and len(rest) > 1:
        token, _, rest = rest.partition(" ")
        for i, letter in enumerate(token[1:], start=2):
            if letter + ":" in takes:  # its value is the rest of the token, or the next word
                rest = rest.lstrip().partition(" ")[2] if i == len(token) else rest
                break
        rest = rest.lstrip()
    return rest


class _Shell:
    """The grader's stand-in for IPython: runs the code of %time/%timeit/%prun/%%time/%%capture once, nothing else."""
    RUN = ("time", "timeit", "capture", "prun")
    OPTIONS = {"timeit": "n:r:tcp:qo", "prun": "D:l:rs:T:q"}  # as IPython parses them

    def run_line_magic(self, name, line, *rest):
        if name in self.RUN:
            exec(_statement(line, self.OPTIONS.get(name, "")), globals())

    def run_cell_magic(self, name, line, cell):
        if name in self.RUN:  # %%timeit's line is setup code, run first; %%prun's comes before the cell
            head = _statement(line, self.OPTIONS[name]) if name in self.OPTIONS else ""
            exec(head + "\\n" + cell, globals())

    def system(self, *args, **kwargs):
        return None

    def getoutput(self, *args, **kwargs):
        return []


def get_ipython():
    return _Shell()
'''


class NotebookError(ValueError):
    """A file that is not a notebook the grader can read (said in one sentence)."""


def _is_grader(module):
    """`grader` or a module inside it (or `specdec.grading`, where earlier handouts imported check from)."""
    return any(module == m or module.startswith(m + ".") for m in ("grader", "specdec.grading"))


def _is_check(node):
    """An import of the grader, or a statement whose value is a call to check(...)."""
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return _is_grader(module) or (module == "specdec" and any(a.name == "grading" for a in node.names))
    if isinstance(node, ast.Import):
        return any(_is_grader(a.name) for a in node.names)
    value = getattr(node, "value", None) if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
    func = getattr(value, "func", None)
    return isinstance(func, ast.Name) and func.id == "check" or isinstance(func, ast.Attribute) and func.attr == "check"


def python_lines(text):
    """`text` cut into lines where Python's tokenizer cuts it: at \\n, \\r\\n and \\r only.

    Subtle: str.splitlines() also cuts at ``\\x0c``, ``\\x1c``-``\\x1e``, ``\\x85``, U+2028 and U+2029, which Python
    reads as ordinary characters (a U+2028 pasted into a comment is still the comment): cutting there
    would turn the rest of the comment into code and shift every line number after it.

    >>> python_lines("# a\\u2028b\\nx = 1\\r\\ny = 2\\n")
    ['# a\\u2028b', 'x = 1', 'y = 2']
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _without_check(source):
    """`source` with its check statements replaced by `pass` lines (line numbers kept)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # e.g. 200000 unary minus signs
        return source
    lines = python_lines(source)
    for node in tree.body:
        if _is_check(node):
            lines[node.lineno - 1:node.end_lineno] = ["pass"] + [""] * (node.end_lineno - node.lineno)
    return "\n".join(lines) + "\n"


def code_cells(text):
    """[(cell number counting every cell from 1, source)] of the code cells, or NotebookError."""
    if text.count("[") + text.count("{") + text.count(",") > MAX_VALUES:  # counts every value, and more
        raise NotebookError(f"not a notebook we grade: its JSON holds more than {MAX_VALUES} values")
    try:
        notebook = json.loads(text)
    except ValueError as exc:
        raise NotebookError(f"not a notebook: the file is not valid JSON ({exc})") from None
    except (RecursionError, MemoryError):
        raise NotebookError("not a notebook: its JSON is nested too deeply") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("not a notebook: it has no list of cells")
    out = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a notebook: cell {number} is not an object")
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"not a notebook: cell {number} has a source that is not text")
        if cell.get("cell_type") == "code":
            out.append((number, source))
    return out


def notebook_to_script(text, deadline=None):
    """(script, where): the script, and where[i] = (cell, line) for script line i + 1 (None: grader lines).

    `deadline` (a time.monotonic() value): NotebookError if the cells are not read by then.
    """
    from IPython.core.inputtransformer2 import TransformerManager
    transform = TransformerManager().transform_cell
    lines, where = PRELUDE.splitlines(), [None] * len(PRELUDE.splitlines())
    for number, source in code_cells(text):
        if deadline is not None and time.monotonic() > deadline:
            raise NotebookError(f"reading the notebook's magics took too long (stopped at cell {number})")
        code = source
        if len(source) * len(MAGIC.findall(source)) <= MAX_TRANSFORM:
            try:
                with warnings.catch_warnings():  # e.g. a line IPython cut at U+2028 has no line ending
                    warnings.simplefilter("ignore")
                    code = transform(source)
            except Exception:  # IPython could not read the cell: Python reports it as it stands
                pass
        cell = python_lines(_without_check(code))
        lines.append(f"# cell {number}")
        where.append(None)
        lines += cell
        where += [(number, i) for i in range(1, len(cell) + 1)]
    return "\n".join(lines) + "\n", where
