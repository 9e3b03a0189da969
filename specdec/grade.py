"""`python -m specdec.grade`: the course's grader command, kept under the course's name.

The grading engine is the top-level package `grader` (it knows nothing about
speculative decoding); this module only runs its command line, `grader.cli`.
"""

from grader.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
