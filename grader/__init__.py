"""The grading engine: hidden cases, points, a diagnosis, and a sandbox for untrusted submissions.

It knows nothing about speculative decoding: each exercise's cases, kinds and
known mistakes live in its own folder (exercises/exNN_name/grading.py), found
through the table in `exercises/__init__.py` (`registry`).

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
    registry    the exercises, from exercises.COURSE (each folder's grading.py)
    judge       trusted comparisons of the plain data that came back
    replay      some calls of each statistical case again, in a fresh sandbox: the same outputs, or it fails
    diagnose    one most likely cause per submission, from which cases failed
    verdict, report           judged outcomes -> a Report: text, JSON, HTML (and CSV in batch)
    submission, batch, checking  one file, a folder, `check()` on a function in a notebook
    notebook    a notebook submission as the script its kernel would run
    inprocess   check() and the catalogue of mistakes, run in this process
    release     the exercises as learners get them
    cli         `python -m specdec.grade`
Importing this package imports no NumPy, and no exercise until `check` or `grade_file` is first used
(an exercise's grading imports the engine's modules: loading them all at once would be circular).
"""

__all__ = ["check", "grade_file"]


def __getattr__(name):
    if name == "check":
        from .checking import check
        return check
    if name == "grade_file":
        from .submission import grade_file
        return grade_file
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
