"""The grader: hidden cases, points, a diagnosis, and a sandbox for untrusted submissions.

    python -m specdec.grade exercises/ex01_verify/ex01_verify.py     # one file (or .ipynb)
    python -m specdec.grade --batch DIR --csv out.csv --seed 1234      # a folder, fresh hidden cases
    check(verify_speculative_tokens)                                  # in a notebook

The trust boundary, from the untrusted side in:
    worker      the only grader code inside the sandbox: load, call, send plain data back
    sandbox     how it runs: bubblewrap namespaces, rlimits, a fallback, kill the whole sandbox
    mounts      what a sandbox contains: the interpreter, shared libraries, the worker, one submission
    protocol    the plain data that crosses the boundary, validated in the parent
    session     one submission's cases, with a time limit per case and per submission
and, trusted, in the parent:
    cases       Case / Kind / Exercise; hidden cases generated from a seed
    ex01 .. ex06, registry    one module of cases (and known mistakes) per exercise, imported explicitly
    judge, stats, samplers    comparisons, statistics, the sampler exercises' shared cases
    replay      some calls of each statistical case again, in a fresh sandbox: the same outputs, or it fails
    diagnose    one most likely cause per submission, from which cases failed
    verdict, report           judged outcomes -> a Report: text, JSON, HTML (and CSV in batch)
    submission, batch, check  one file, a folder, a function in a notebook
    notebook    a notebook submission as the script its kernel would run
    inprocess   check() and the catalogue of mistakes, run in this process
    release     the exercises as learners get them
Importing this package imports no NumPy.
"""

from .check import check
from .submission import grade_file

__all__ = ["check", "grade_file"]
