"""The grader's command line: grade one submission, or a folder of them.

    python -m specdec.grade SUBMISSION [--exercise ex01] [--json] [--timeout SECONDS]
    python -m specdec.grade --batch DIR [--exercise ex01] --csv grades.csv [--jobs N]

One file: prints the table (last line `score: 87/100 (+10 bonus)`), or with
--json exactly one JSON document; whatever the submission prints is captured
in its own process and never reaches this output. Exit code 0 when every
case passed, 1 when some failed, 2 when the submission cannot be graded
(syntax error, missing function, dies on import) or the command is misused.
A folder: a CSV row per file and a progress bar on stderr; exit 0 once the
CSV is written. See `specdec.grading` for how the isolation works.
"""

import argparse
import sys

from .grading.batch import grade_folder, write_csv
from .grading.submission import grade_file


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m specdec.grade", description=__doc__.splitlines()[0])
    parser.add_argument("submission", nargs="?", help="a .py file or an exercise notebook (.ipynb)")
    parser.add_argument("--exercise", help="ex01 ... ex05 (default: from the file name, e.g. ex01_verify.py)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per case (default 10)")
    parser.add_argument("--batch", metavar="DIR", help="grade every .py/.ipynb file in DIR")
    parser.add_argument("--csv", help="with --batch: write the grades here")
    parser.add_argument("--jobs", type=int, default=2, help="with --batch: parallel workers (default 2)")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error("--timeout must be > 0")  # exits with 2
    if args.batch:
        if not args.csv:
            parser.error("--batch needs --csv FILE")
        try:
            reports = grade_folder(args.batch, args.exercise, args.timeout, args.jobs)
        except (OSError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        write_csv(reports, args.csv)
        graded = sum(r.status != "error" for r in reports)
        print(f"graded {graded} of {len(reports)} submissions -> {args.csv}")
        return 0
    if not args.submission:
        parser.error("give a SUBMISSION file or --batch DIR")
    try:
        report = grade_file(args.submission, args.exercise, args.timeout)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(report.to_json())
    else:
        print(report.table())
    if report.error:
        print(f"cannot grade {args.submission}: {report.error}", file=sys.stderr)
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
