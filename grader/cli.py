"""The grader's command line: grade one submission or a folder of them; release the exercises.

    python -m specdec.grade SUBMISSION [--exercise ex01] [--json] [--seed N] [--sandbox auto|bwrap|process]
    python -m specdec.grade --batch DIR --csv grades.csv [--exercise ex01] [--jobs 2] [--seed N]
    python -m specdec.grade release OUT/

One file: prints the table (failures first; last line `score: 87/100 (+10 bonus)`),
or with --json exactly one JSON document; whatever the submission prints stays
in its sandbox. Exit 0 when every case passed, 1 when some failed, 2 when the
submission cannot be graded (syntax error, missing function, dies on import,
malformed notebook) or the command is misused. A folder: one CSV row per file,
written after every sandbox is gone; exit 0 once the CSV is written.
`--seed N` (or SPECDEC_GRADE_SEED) draws fresh hidden cases from a secret:
instructors use it, because the shipped ones (seed 0) are readable in the package.
See `grader` for the sandbox and exercises/README.md for the workflow.

    >>> _parser().parse_args(["ex01_alice.py", "--seed", "7"]).seed
    7
"""

import argparse
import os
import sys

from .batch import grade_apart, grade_folder, write_csv
from .release import release
from .report import clean
from .sandbox import SandboxError, resolve
from .submission import default_max_seconds

EXAMPLES = """examples:
  python -m specdec.grade exercises/ex01_verify/ex01_verify.py
  python -m specdec.grade alice_ex01.ipynb --json
  python -m specdec.grade --batch submissions/ --csv grades.csv --exercise ex01 --seed 48213
  python -m specdec.grade release handout/"""
MAX_JOBS = 64


def _parser():
    parser = argparse.ArgumentParser(prog="python -m specdec.grade", description=__doc__.splitlines()[0],
                                     epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submission", nargs="?", help="a .py file or an exercise notebook (.ipynb)")
    parser.add_argument("--exercise", help="ex01 ... ex06 (default: from the file name, e.g. ex01_verify.py)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per case (default 10)")
    parser.add_argument("--max-seconds", type=float, help="seconds per submission, all cases and both runs "
                        "(default max(60, 3 * timeout + 30))")
    parser.add_argument("--seed", type=int,
                        help="secret seed for fresh hidden cases "
                             "(default $SPECDEC_GRADE_SEED, else 0: the shipped ones)")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "process"), default="auto",
                        help="auto (default): bwrap when it works, else a warned fallback to process")
    parser.add_argument("--batch", metavar="DIR", help="grade every .py/.ipynb file in DIR")
    parser.add_argument("--csv", help="with --batch: write the grades here")
    parser.add_argument("--jobs", type=int,
                        help=f"with --batch: submissions graded at once, 1 to {MAX_JOBS} (default 2)")
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["release"]:
        if len(argv) != 2:
            print("usage: python -m specdec.grade release OUT/", file=sys.stderr)
            return 2
        try:
            written = release(argv[1])
        except (OSError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"released {len(written)} files for learners -> {argv[1]} (no solutions)")
        return 0
    parser = _parser()
    args = parser.parse_args(argv)
    if not 0 < args.timeout < 1e6 or (args.max_seconds is not None and not 0 < args.max_seconds < 1e6):
        parser.error("--timeout and --max-seconds must be > 0 seconds (and finite)")  # exits with 2
    if args.seed is None:
        seed = os.environ.get("SPECDEC_GRADE_SEED", "").strip() or "0"
        try:
            args.seed = int(seed)
        except ValueError:
            parser.error(f"SPECDEC_GRADE_SEED must be an integer, got {clean(seed, 40)!r}")
    if not args.batch:
        for flag, value in (("--csv", args.csv), ("--jobs", args.jobs)):
            if value is not None:
                parser.error(f"{flag} goes with --batch DIR")
    else:
        if not args.csv:
            parser.error("--batch needs --csv FILE")
        folder = os.path.dirname(os.path.abspath(args.csv))
        if os.path.isdir(args.csv) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            parser.error(f"--csv {args.csv!r}: not a file in a folder this user can write to")  # before any grading
        if args.jobs is not None and not 1 <= args.jobs <= MAX_JOBS:
            parser.error(f"--jobs must be between 1 and {MAX_JOBS}, got {args.jobs}")
    try:
        mode, warning = resolve(args.sandbox)
    except SandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if warning:
        print(warning, file=sys.stderr)
    options = {"timeout": args.timeout, "max_seconds": args.max_seconds or default_max_seconds(args.timeout),
               "mode": mode, "seed": args.seed}
    if args.batch:
        try:
            reports = grade_folder(args.batch, args.exercise, args.jobs or 2, **options)
            write_csv(reports, args.csv)
        except (OSError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        errors = sum(r.status == "error" for r in reports)
        print(f"{len(reports)} submissions -> {args.csv}: {len(reports) - errors} graded"
              + (f", {errors} could not be graded (the CSV's error column says why)" if errors else ""))
        return 0
    if not args.submission:
        parser.error("give a SUBMISSION file, --batch DIR, or release OUT/")
    try:
        report = grade_apart(args.submission, args.exercise, **options)  # in a grading process of its own
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report.to_json() if args.json else report.table())
    if report.error:
        print(f"cannot grade {report.source}: {clean(report.error, 2000)}", file=sys.stderr)  # learner text: cleaned
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
