"""A learner's checker: `python -m grader.practice FILE [--exercise exNN]`, the public and practice cases.

The learner's own file (a `.py`, or a notebook turned into the script its kernel would run) is run in
this process, as in their own session (no sandbox: it is their code, on their machine), and its
functions are checked by `check()` on the exercise's public cases and practice cases: in a handout
(`release.py`) these are the released ones, with no reference solution anywhere; in the course
repository they are drawn the same way. Exit 0 when every case passed, 1 when some failed, 2 when
the file cannot be run. The bonus and the statistical cases are decided only by the instructor's grader.

    >>> main(["--help"])
    Traceback (most recent call last):
    SystemExit: 0
"""

import argparse
import os
import re
import sys
import traceback

from . import worker
from .checking import check
from .notebook import NotebookError, cells_of, locate, notebook_to_script
from .registry import FOLDERS, PRACTICE_KEY, exercise, practice_cases


def _exercise_of(path):
    match = re.search(r"(?<![a-z0-9])(ex\d\d)(?!\d)", os.path.basename(path).lower())
    return match.group(1) if match else None


def _place(exc, filename, where):
    """' (cell 3, line 2)' (a notebook) or ' (line 12)' for where `exc` left the learner's file, else ''."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    line = frames[-1].lineno if frames else getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    if not isinstance(line, int):
        return ""
    info = locate({"line": line}, where)
    return f" ({info.get('where') or f'line {line}'})"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader.practice", description=__doc__.splitlines()[0])
    parser.add_argument("file", help="your .py file or your exercise notebook (.ipynb)")
    parser.add_argument("--exercise", choices=list(FOLDERS), metavar="exNN",
                        help=f"one of {', '.join(FOLDERS)} (default: from the file name)")
    args = parser.parse_args(argv)
    name = args.exercise or _exercise_of(args.file)
    if name not in FOLDERS:
        parser.error(f"cannot tell the exercise from {os.path.basename(args.file)!r}: pass --exercise")
    try:
        with open(args.file, encoding="utf-8", errors="replace") as f:
            text = f.read()
        code, where = notebook_to_script(text) if args.file.endswith(".ipynb") else (text, None)
    except (OSError, NotebookError) as exc:
        print(f"error: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    ex = exercise(name)
    # The lines a traceback quotes: the script's own (a notebook's file holds JSON, not these lines).
    worker.SOURCE[args.file] = code.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    scope = {"__name__": "__learner__", "__file__": os.path.abspath(args.file)}
    stopped = {}
    try:
        if where is None:
            exec(compile(code, args.file, "exec"), scope)
        else:   # as Jupyter's Run All runs it: cell by cell, stopping at the first cell that raises
            stopped = worker.run_notebook(code, args.file, scope, cells_of(where))
    except BaseException as exc:  # their file: say what went wrong, as the grader would
        print(f"error: running {args.file} raised {type(exc).__name__}: {exc}{_place(exc, args.file, where)}",
              file=sys.stderr)
        return 2
    if stopped:
        info = locate(dict(stopped["error"]), where)
        print(f"note: cell {stopped['stopped_at']} raised {info['type']}: {info.get('message', '')} "
              f"({info.get('where', 'its code')}). Jupyter's Run All stops at that cell, and so does this check: "
              "what the cells above it define is checked", file=sys.stderr)
    missing = [f for f in ex.functions if not callable(scope.get(f))]
    if missing:
        print(f"error: {args.file} defines no function {', '.join(missing)}", file=sys.stderr)
        return 2
    cases, left_out = (ex.public, list(getattr(ex, "left_out", []))) if not ex.kinds else practice_cases(ex)
    report = check(*[scope[f] for f in ex.functions], exercise=name, quiet=True, cases=cases, key=PRACTICE_KEY,
                   where=where)
    print(report.table())
    if left_out:
        print(f"checked by the instructor's grader only: {', '.join(left_out)}")
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
