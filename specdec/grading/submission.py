"""Grade one submission file: a .py file, or an exercise notebook (.ipynb).

A notebook is turned into a script first: its code cells in order, minus
the check cell (any cell importing `specdec.grading`), IPython magics and
shell lines (`%time`, `!pip ...`) and bare `check(...)` calls.

    >>> infer_exercise("homework/ex01_verify_alice.py")
    'ex01'
    >>> notebook_to_script({"cells": [{"cell_type": "code", "source": "%time x = 1\\ny = 2"}]})
    '# cell 1\\ny = 2\\n'
"""

import json
import os
import re
import tempfile

from .cases import exercise as get_exercise
from .report import build_report
from .runner import run_submission


def infer_exercise(path):
    """'ex01' from a file name such as ex01_verify.py or ex01-alice.ipynb; None if absent."""
    match = re.search(r"(?<![a-z0-9])(ex\d\d)(?!\d)", os.path.basename(path).lower())
    return match.group(1) if match else None


def notebook_to_script(notebook):
    """The code a notebook's learner wrote, as one Python source string."""
    parts = []
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if "specdec.grading" in source or source.lstrip().startswith("%%"):
            continue  # the check cell, or a whole-cell magic
        kept = [line for line in source.splitlines()
                if not re.match(r"\s*(%|!|check\()", line)]
        parts.append(f"# cell {number}\n" + "\n".join(kept) + "\n")
    return "\n".join(parts)


def grade_file(path, exercise=None, timeout=10.0):
    """Grade `path` on `exercise` (inferred from the file name when None); return a Report.

    Raises ValueError only for the grader's own usage errors (no such file,
    unknown exercise); a broken submission gives a Report with `error` set.
    """
    if not os.path.isfile(path):
        raise ValueError(f"no such file: {path}")
    if not path.endswith((".py", ".ipynb")):
        raise ValueError(f"{path}: expected a .py file or an exercise notebook (.ipynb)")
    name = exercise or infer_exercise(path)
    if name is None:
        raise ValueError(f"cannot tell the exercise from the file name {os.path.basename(path)!r}: "
                         "pass --exercise ex01 (or name the file ex01_...)")
    ex = get_exercise(name)
    if path.endswith(".ipynb"):
        try:
            with open(path, encoding="utf-8") as f:
                script = notebook_to_script(json.load(f))
        except (ValueError, OSError) as exc:
            return build_report(ex, [None] * len(ex.cases), error=f"not a readable notebook: {exc}", source=path)
        with tempfile.TemporaryDirectory(prefix="specdec-nb-") as tmp:
            script_path = os.path.join(tmp, "notebook_code.py")
            with open(script_path, "w", encoding="utf-8") as f:
                f.write(script)
            run = run_submission(script_path, ex, timeout)
    else:
        run = run_submission(path, ex, timeout)
    plain = None if run.load_error else not run.numpy  # unknown when it never ran
    return build_report(ex, run.messages, plain_python=plain, error=run.load_error, source=path)
