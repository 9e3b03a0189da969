"""A notebook submission as the Python script its kernel would run, minus the grader's own check.

Each code cell goes through IPython's own input transformer (the one a kernel
uses), so `%time`, `!pip ...`, `%%time` cells and continuation lines mean what
they mean in Jupyter. The transformed magics call `get_ipython()`, which the
script defines as a small stand-in: `%time`/`%timeit`/`%prun`/`%%time`/`%%capture`
run their code once (after their options, read as IPython reads them: `%timeit -n 10 f()`
runs `f()`; `%%timeit`'s line is setup code, run first); `out = %time f(x)` keeps f's
value, `t = %timeit -o f(x)` a timing (t.average ...), `%%capture cap` the cell's output
(cap.stdout), `%%writefile helper.py` writes a file that `import helper` then finds; every
other magic and shell line does nothing. What Jupyter gives a notebook without an import
is there too: `display(...)`, and stand-ins for IPython, IPython.display (Markdown, HTML,
clear_output ...) and IPython.core (the worker stands in for matplotlib: see worker._Plot).
A notebook of nbformat 3 (cells inside "worksheets", code in "input") is read as one of
nbformat 4. Dropped:
top-level statements that import `grader` (or `specdec.grading`, as earlier handouts did) or call `check(...)` (the
check cell), found in each cell's syntax tree, so a comment that mentions the
grader changes nothing. A cell that does not parse is kept: the grader then
reports its SyntaxError with the cell and line.

The notebook is hostile input read by the grading process, so the work is
bounded: JSON nested too deeply, or with more than MAX_VALUES values (counted on its text before it is
parsed: 32 MiB of `[],` would take 830 MB of lists), is a NotebookError. Cells' saved outputs are not the
code: they are skipped before anything is counted or parsed (`_without_outputs`: an honest notebook whose
output printed 1.1 million numbers was refused), their brackets counted apart (MAX_OUTPUT_STRUCTURES). A lone
surrogate (a "\\ud800" escape that no UTF-8 text can hold) becomes U+FFFD: the script, and every report
that quotes it, stays valid text; IPython reads a whole cell
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
# Brackets inside the cells' saved outputs (skipped one bracket at a time, not parsed): a display of a list of a
# million numbers is one pair; 100,000 take about 0.2 s.
MAX_OUTPUT_STRUCTURES = 100_000
# What IPython rewrites one at a time: an escape starting a line (%time, !ls, ?x, /f x), x = %magic or
# x = !cmd, a line ending in ?. A superset: `x % 2` or `a != b` are not counted, `/` at a line start is.
MAGIC = re.compile(r"^[ \t]*[%!?/,;]|=[ \t]*[%!]|\?[ \t]*$", re.MULTILINE)

PRELUDE = '''\
def _statement(line, takes):
    """(the code after a magic's options, the option letters given); takes: IPython's letters, ':' after those
    that take a value."""
    rest, given = line.strip(), set()
    while rest.startswith("-") and len(rest) > 1:
        token, _, rest = rest.partition(" ")
        for i, letter in enumerate(token[1:], start=2):
            given.add(letter)
            if letter + ":" in takes:  # its value is the rest of the token, or the next word
                rest = rest.lstrip().partition(" ")[2] if i == len(token) else rest
                break
        rest = rest.lstrip()
    return rest, given


class _TimeitResult:
    """What `t = %timeit -o ...` gives: the stand-in ran the statement once, and this is that one timing."""

    def __init__(self, seconds):
        self.loops, self.repeat, self.best, self.worst = 1, 1, seconds, seconds
        self.all_runs, self.timings, self.average, self.stdev = [seconds], [seconds], seconds, 0.0
        self.compile_time, self.precision = 0.0, 3

    def __repr__(self):
        return f"{self.average:.3g} s per loop (the grader ran it once)"


class _Captured:
    """What `%%capture cap` binds: the cell's standard output and error."""

    def __init__(self, stdout, stderr):
        self.stdout, self.stderr, self.outputs = stdout, stderr, []

    def show(self):
        print(self.stdout, end="")

    __call__ = show


class _Shell:
    """The grader's stand-in for IPython: %time/%timeit/%prun/%%time/%%capture run their code once (a line magic on
    an expression returns its value, as %time does; `%timeit -o` a timing), %%writefile writes its file where an
    import finds it; every other magic and shell line does nothing."""
    RUN = ("time", "timeit", "capture", "prun")
    OPTIONS = {"timeit": "n:r:tcp:qo", "prun": "D:l:rs:T:q"}  # as IPython parses them
    user_ns = globals()

    def run_line_magic(self, name, line, *rest):
        if name in ("env", "set_env"):
            return self._env(line)
        if name not in self.RUN:
            return None
        import time as _time
        code, given = _statement(line, self.OPTIONS.get(name, ""))
        started = _time.perf_counter()
        try:
            value = eval(compile(code, "<magic>", "eval"), globals())
        except SyntaxError:
            value = exec(code, globals())
        if name == "timeit":
            return _TimeitResult(_time.perf_counter() - started) if "o" in given else None
        return value if name == "time" else None

    def run_cell_magic(self, name, line, cell):
        if name in ("writefile", "file"):
            return self._writefile(line, cell)
        if name == "capture":
            return self._capture(line, cell)
        if name in self.RUN:  # %%timeit's line is setup code, run first; %%prun's comes before the cell
            head = _statement(line, self.OPTIONS[name])[0] if name in self.OPTIONS else ""
            exec(head + "\\n" + cell, globals())
        return None

    def _env(self, line):
        """%env and %set_env as IPython reads them: list, read one variable, or set one (NAME=value, NAME value)."""
        import os
        line = line.strip()
        if not line:
            return dict(os.environ)
        if "=" in line:
            name, value = line.split("=", 1)
        elif " " in line:
            name, value = line.split(None, 1)
        else:
            return os.environ.get(line)
        os.environ[name.strip()] = value.strip()
        return None

    def _capture(self, line, cell):
        import contextlib
        import io
        names = [w for w in line.split() if not w.startswith("-")]
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                exec(cell, globals())
        finally:
            if names:
                globals()[names[0]] = _Captured(out.getvalue(), err.getvalue())

    def _writefile(self, line, cell):
        import os
        import sys
        import tempfile
        words = line.split()
        append = "-a" in words or "--append" in words
        names = [w.strip("'\\"") for w in words if not w.startswith("-")]
        if not names:
            return None
        folder = _Shell.folder = getattr(_Shell, "folder", None) or tempfile.mkdtemp(prefix="notebook-")
        if folder not in sys.path:  # where Jupyter's kernel would find it: its working folder
            sys.path.insert(0, folder)
            os.chdir(folder)
        path = os.path.join(folder, names[0].lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a" if append else "w", encoding="utf-8") as f:
            f.write(cell)
        import importlib
        importlib.invalidate_caches()
        return None

    def system(self, *args, **kwargs):
        return None

    def getoutput(self, *args, **kwargs):
        return []

    def __getattr__(self, name):  # get_ipython().kernel, .config, .events.register(...): nothing
        if name.startswith("__"):
            raise AttributeError(name)
        return _Nothing()


class _Nothing:
    """Anything IPython's display machinery offers (Markdown, HTML, clear_output ...): it takes any argument."""

    def __init__(self, *args, **kwargs):
        self.data = args[0] if args else None

    def __call__(self, *args, **kwargs):
        return _Nothing(*args)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Nothing()

    def __repr__(self):
        return repr(self.data)


_SHELL = _Shell()


def get_ipython():
    return _SHELL


def display(*objs, **kwargs):
    """Jupyter's `display`, which a notebook uses without importing it: nothing is shown."""
    return None


def _ipython_modules():
    """IPython, IPython.display, IPython.core.display ...: the few names a notebook imports from them."""
    import sys
    import types

    def missing(attr):  # a name it lacks: a stand-in, but never for __file__, __spec__ ... (tools read those)
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Nothing if attr[:1].isupper() else _Nothing()

    def module(name, **names):
        m = types.ModuleType(name)
        m.__dict__.update(names)
        m.__getattr__ = missing
        m.__path__ = []
        sys.modules[name] = m
        return m
    shown = dict(display=display, clear_output=lambda *a, **k: None, update_display=lambda *a, **k: None)
    for name in ("IPython.display", "IPython.core.display", "IPython.core.display_functions"):
        module(name, **shown)
    module("IPython.core.getipython", get_ipython=get_ipython)
    module("IPython.core.magic", register_line_magic=lambda f: f, register_cell_magic=lambda f: f,
           register_line_cell_magic=lambda f: f)
    module("IPython.core", display=sys.modules["IPython.core.display"],
           getipython=sys.modules["IPython.core.getipython"], magic=sys.modules["IPython.core.magic"])
    module("IPython", get_ipython=get_ipython, display=sys.modules["IPython.display"], core=sys.modules["IPython.core"],
           version_info=(8, 0, 0), __version__="8.0.0 (the grader's stand-in)")


_ipython_modules()
'''


MAX_CODE = 1024 ** 2   # characters of code a submission may hold (a .py file, or a notebook's cells in all)


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


# Outside the outputs: runs of anything but a string, and strings that are not the key "outputs".
_OUTSIDE = re.compile(r'(?:[^"]+|"(?!outputs"\s*:)[^"\\]*(?:\\.[^"\\]*)*")*')
_KEY = re.compile(r'"outputs"\s*:\s*')
_INSIDE = re.compile(r'(?:[^"\[\]{}]+|"[^"\\]*(?:\\.[^"\\]*)*")*')  # up to the next bracket, strings skipped


def _without_outputs(text):
    """`text` with the value of every "outputs" key replaced by [] (in linear time, nothing parsed).

    >>> _without_outputs('{"outputs": [{"text": "1, 2, ]"}], "source": "x"}')
    '{"outputs": [], "source": "x"}'
    """
    if '"outputs"' not in text:
        return text
    parts, pos, brackets = [], 0, 0
    while True:
        end = _OUTSIDE.match(text, pos).end()
        if end >= len(text):
            parts.append(text[pos:])
            return "".join(parts)
        key = _KEY.match(text, end)
        start = key.end() if key else len(text)
        if start >= len(text) or text[start] not in "[{":  # "outputs": 3, or not a key: kept as it is
            stop = end + len('"outputs"')
            parts.append(text[pos:stop])
            pos = stop
            continue
        depth, at = 0, start
        while True:
            at = _INSIDE.match(text, at).end()
            if at >= len(text):
                raise NotebookError("not a notebook: the file is not valid JSON (an output never ends)")
            brackets += 1
            if brackets > 2 * MAX_OUTPUT_STRUCTURES:
                raise NotebookError(f"not a notebook we grade: its outputs hold more than {MAX_OUTPUT_STRUCTURES} "
                                    "structures")
            depth += 1 if text[at] in "[{" else -1
            at += 1
            if depth == 0:
                break
        parts.append(text[pos:start] + "[]")
        pos = at


def clean_text(text):
    """`text` with every lone surrogate (which no UTF-8 text can hold) replaced by U+FFFD.

    >>> clean_text("a\\ud800b"), clean_text("\\ud83d\\ude00")
    ('a\ufffdb', '😀')
    """
    if text.isascii():
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def decode_source(data):
    """A .py file's bytes as text, in the encoding it declares (PEP 263: a coding line, a UTF-8 BOM), else UTF-8;
    bytes that are not of that encoding become U+FFFD (the compiler then reports them where they are).

    >>> decode_source("# coding: latin-1\\nx = 'caf\\xe9'\\n".encode("latin-1")).splitlines()[1]
    "x = 'café'"
    """
    import codecs
    import io
    import tokenize
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        codecs.lookup(encoding)
    except (SyntaxError, LookupError):
        encoding = "utf-8"
    if encoding == "utf-8-sig" or data.startswith(codecs.BOM_UTF8):
        data, encoding = data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data, "utf-8"
    return data.decode(encoding, errors="replace")


def code_cells(text):
    """[(cell number counting every cell from 1, source)] of the code cells, or NotebookError.

    nbformat 4 keeps its cells in "cells" and their code in "source"; nbformat 3 in "worksheets"[i]["cells"]
    and "input".
    """
    text = _without_outputs(text)
    if text.count("[") + text.count("{") + text.count(",") > MAX_VALUES:  # counts every value, and more
        raise NotebookError(f"not a notebook we grade: its JSON holds more than {MAX_VALUES} values")
    try:
        notebook = json.loads(text)
    except ValueError as exc:
        raise NotebookError(f"not a notebook: the file is not valid JSON ({exc})") from None
    except (RecursionError, MemoryError):
        raise NotebookError("not a notebook: its JSON is nested too deeply") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if cells is None and isinstance(notebook, dict) and isinstance(notebook.get("worksheets"), list):
        cells = [c for w in notebook["worksheets"] if isinstance(w, dict) and isinstance(w.get("cells"), list)
                 for c in w["cells"]]
    if not isinstance(cells, list):
        raise NotebookError("not a notebook: it has no list of cells")
    out = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a notebook: cell {number} is not an object")
        source = cell.get("source", cell.get("input", "")) if cell.get("cell_type") == "code" else \
            cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"not a notebook: cell {number} has a source that is not text")
        if cell.get("cell_type") == "code":
            out.append((number, clean_text(source)))
    return out


def notebook_to_script(text, deadline=None):
    """(script, where): the script, and where[i] = (cell, line) for script line i + 1 (None: grader lines).

    `deadline` (a time.monotonic() value): NotebookError if the cells are not read by then.
    """
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        transform = TransformerManager().transform_cell
    except ImportError:   # a learner's checker outside Jupyter's environment: magics and shell lines are skipped
        transform = _without_magics
    lines, where = PRELUDE.splitlines(), [None] * len(PRELUDE.splitlines())
    cells = code_cells(text)
    if sum(len(source) for _, source in cells) > MAX_CODE:   # before any cell is transformed or parsed
        raise NotebookError(f"more than {MAX_CODE // 1024} KiB of code")
    for number, source in cells:
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


def _without_magics(source):
    """`source` with its magics and shell lines as `pass` (a `%%` cell magic: the whole cell), line numbers kept:
    how a cell reads where IPython is not installed (the handout's checker run outside Jupyter's environment).

    >>> _without_magics("%time x = 1\\n  !ls\\ny = 2\\n")
    'pass\\n  pass\\ny = 2\\n'
    """
    lines = source.split("\n")
    if lines and lines[0].startswith("%%"):
        return "\n".join("pass" if i == 0 else "" for i in range(len(lines)))
    return "\n".join(line[:len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
                     for line in lines)


def cells_of(where):
    """[(cell number, first line, last line)] of the script's code cells, from `notebook_to_script`'s map (lines
    counted from 1): what the worker runs one cell at a time, as Jupyter does (worker.run_notebook).

    >>> script, where = notebook_to_script('{"cells": [{"cell_type": "code", "source": "x = 1"}, '
    ...                                    '{"cell_type": "markdown", "source": "# A"}, '
    ...                                    '{"cell_type": "code", "source": "y = x\\\\nz = y"}]}')
    >>> [(n, script.splitlines()[a - 1:b]) for n, a, b in cells_of(where)]
    [(1, ['x = 1']), (3, ['y = x', 'z = y'])]
    """
    out = []
    for line, place in enumerate(where, start=1):
        if place is None:
            continue
        if out and out[-1][0] == place[0] and out[-1][2] == line - 1:
            out[-1][2] = line
        else:
            out.append([place[0], line, line])
    return [tuple(c) for c in out]


def locate(info, where):
    """Turn the script line of an exception's `info` into 'cell 3, line 2' for a notebook (in place).

    `where` is `notebook_to_script`'s map: the cell is numbered by its place in the notebook, counting every
    cell (markdown too) from 1 at the top, the line within that cell's own source from 1. The command-line
    grader and the practice checker (`practice.py`) both say it this way.

    >>> script, where = notebook_to_script('{"cells": [{"cell_type": "markdown", "source": "# A"}, '
    ...                                    '{"cell_type": "code", "source": "x = 1\\\\ny = 1 / 0"}]}')
    >>> info = {"line": script.splitlines().index("y = 1 / 0") + 1}
    >>> locate(info, where)["where"]
    'cell 2, line 2'
    """
    line = info.get("line")
    if where and isinstance(line, int) and 0 < line <= len(where):
        info["where"] = "grader's notebook stand-in" if where[line - 1] is None else \
            "cell {}, line {}".format(*where[line - 1])
    return info


def localize(outcomes, where, load_error=None):
    """`locate` every exception the outcomes (and a load error) report, in place."""
    for outcome in outcomes:
        for result in (outcome or {}).get("results", []):
            for key in ("raised", "unconvertible"):
                if key in result:
                    locate(result[key], where)
    if load_error:
        locate(load_error, where)
