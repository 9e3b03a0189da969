"""The grader: hidden cases, points, per-case feedback, isolation with time limits.

    python -m specdec.grade exercises/ex01_verify/ex01_verify.py     # one file (or .ipynb)
    python -m specdec.grade --batch DIR --exercise ex01 --csv out.csv  # a folder
    check(verify_speculative_tokens)                                  # in a notebook

Modules: cases (the Case/Exercise types), ex01, ex02_03, ex04, ex05 (the cases),
judge (strict comparisons), child (runs inside the sandboxed process),
runner (the process and its time limits), report (table and JSON),
submission (one file), batch (a folder), check (in a notebook),
stubs (student stubs and notebooks generated from the solutions).
Importing this package imports no NumPy.
"""

from .check import check
from .submission import grade_file

__all__ = ["check", "grade_file"]
