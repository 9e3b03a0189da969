"""The grader's command line: grade one submission or a class; release, package for Gradescope, merge grades.

    python -m specdec.grade SUBMISSION [--exercise ex01] [--json] [--seed N] [--sandbox auto|bwrap|process]
    python -m specdec.grade --batch DIR --csv grades.csv [--feedback DIR] [--json] [--exercise ex01] [--seed N]
    python -m specdec.grade release OUT/ [--exercise ex01]
    python -m specdec.grade gradescope --exercise ex01 --seed N --out autograder.zip
    python -m specdec.grade gradebook class.csv grades_ex01.csv grades_ex02.csv [--lms canvas|moodle|plain]
    python -m specdec.grade similar section_a.zip section_b/ gradescope_export.zip --exercise ex01 [--gradebook G.csv]

One file: prints the table (failures first; last line `score: 87/100 (+10 bonus)`),
or with --json exactly one JSON document; whatever the submission prints stays
in its sandbox. Exit 0 when every case passed, 1 when some failed, 2 when the
submission cannot be graded (syntax error, missing function, dies on import,
malformed notebook) or the command is misused. A class (--batch): one gradebook
row per entry of the folder, written after every sandbox is gone, updating the
rows of a gradebook that exists (`gradebook.py`); `--feedback DIR` writes each
learner's report there in the same run; exit 0 once the gradebook is written.
A class is graded in a sandbox or not at all: without bubblewrap, --batch refuses
unless `--sandbox process` says so. `--seed N` (or SPECDEC_GRADE_SEED) draws fresh
hidden cases from a secret: instructors use it, because the shipped ones (seed 0)
are readable in the package. Nothing a learner sees (reports, feedback, Gradescope
results) holds the seed. See `grader` for the sandbox and exercises/README.md for
the workflow.

    >>> _parser().parse_args(["ex01_alice.py", "--seed", "7"]).seed
    7
"""

import argparse
import datetime
import math
import os
import re
import sys
import tempfile

from . import feedback, gradebook, intake
from .batch import POLICIES, grade_folder, grade_settled
from .registry import FOLDERS
from .report import clean
from .sandbox import SandboxError, resolve
from .submission import default_max_seconds

PROG = "python -m specdec.grade"
EXAMPLES = f"""commands:
  {PROG} SUBMISSION ...            grade one file (this help)
  {PROG} release -h                the exercises as learners get them, with a checker
  {PROG} gradescope -h             an autograder zip for Gradescope
  {PROG} gradebook -h              several exercises' gradebooks as one CSV for Canvas or Moodle
  {PROG} similar -h                similar files across batches and Gradescope exports, with their scores

examples:
  {PROG} exercises/ex01_verify/ex01_verify.py
  {PROG} alice_ex01.ipynb --json
  {PROG} --batch submissions/ --csv grades.csv --exercise ex01 --seed 48213 --feedback feedback/
  {PROG} release handout/ --exercise ex01"""
MAX_JOBS = 64


def _parser():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0], epilog=EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submission", nargs="?", help="a .py file or an exercise notebook (.ipynb)")
    parser.add_argument("--exercise", choices=list(FOLDERS), metavar="exNN",
                        help=f"one of {', '.join(FOLDERS)} (default: from the file name, e.g. ex01_verify.py)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document instead of the table (with --batch: the gradebook)")
    parser.add_argument("--timeout", type=float, default=10.0, help="CPU seconds per case (default 10)")
    parser.add_argument("--max-seconds", type=float, help="CPU seconds per submission, all cases and both runs "
                        "(default max(60, 3 * timeout + 30))")
    parser.add_argument("--seed", type=int,
                        help="secret seed for fresh hidden cases "
                             "(default $SPECDEC_GRADE_SEED, else 0: the shipped ones)")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "process"), default="auto",
                        help="auto (default): bwrap when it works, else a warned fallback to process "
                             "(a --batch refuses that fallback: pass --sandbox process to grade unsandboxed)")
    group = parser.add_argument_group("a class (--batch)")
    group.add_argument("--batch", metavar="DIR_OR_ZIP", help="grade a class: a folder whose every entry is one "
                       "student's upload (.py/.ipynb files, folders, zips), or the zip an LMS downloads (Canvas, "
                       "Moodle, a Gradescope export); a row per student and exercise")
    group.add_argument("--policy", choices=list(POLICIES), default="latest",
                       help="which of a student's uploads counts: " + "; ".join(f"{k}: {v}" for k, v in
                                                                               POLICIES.items()))
    group.add_argument("--due", metavar="WHEN", help="the due date (ISO 8601, e.g. 2026-12-01T23:59+01:00): an "
                       "upload after it is late (Canvas's _LATE_ marks one late too)")
    group.add_argument("--late-penalty", type=float, default=0.0, metavar="PERCENT",
                       help="percent off a late row's total (default 0)")
    group.add_argument("--csv", metavar="FILE", help="the gradebook to write, or to update if it exists")
    group.add_argument("--feedback", metavar="DIR", help="write each learner's report there (.txt and .html)")
    group.add_argument("--student-pattern", metavar="REGEX",
                       help="how a file name gives the student id: a regex with a group (?P<student>...) "
                            "(default: Canvas's and Moodle's names, else the name without extension)")
    group.add_argument("--jobs", type=int, help=f"submissions graded at once, 1 to {MAX_JOBS} (default 2)")
    return parser


def _seed(parser, args):
    if args.seed is None:
        seed = os.environ.get("SPECDEC_GRADE_SEED", "").strip() or "0"
        try:
            args.seed = int(seed)
        except ValueError:
            parser.error(f"SPECDEC_GRADE_SEED must be an integer, got {clean(seed, 40)!r}")


def _writable(parser, flag, path, folder_ok=False):
    """`path` can be written: a file (or, `folder_ok`, a folder) that is new or of that kind, in a writable folder."""
    folder = os.path.dirname(os.path.abspath(path))
    wrong_kind = os.path.isdir(path) if not folder_ok else os.path.exists(path) and not os.path.isdir(path)
    if wrong_kind or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        parser.error(f"{flag} {path!r}: not a {'folder' if folder_ok else 'file'} in a folder this user can write to")


def _class_source(parser, flag, path):
    """`path` is what `intake.read_batch` reads: a class folder, or a zip (an LMS's download, a Gradescope export)."""
    if not os.path.isdir(path) and not (os.path.isfile(path) and path.lower().endswith(".zip")):
        parser.error(f"{flag}{path!r}: not a folder or a zip file")


def _times(parser, args):
    """--timeout and --max-seconds: finite and > 0 (refused before any grading, by every command)."""
    for flag, value in (("--timeout", args.timeout), ("--max-seconds", getattr(args, "max_seconds", None))):
        if value is not None and not (math.isfinite(value) and 0 < value < 1e6):
            parser.error(f"{flag} must be a number of seconds > 0 and finite, got {value}")  # exits with 2


def _due(parser, text):
    """--due as a time.time() value; an ISO 8601 date without a zone is in this machine's zone."""
    if text is None:
        return None
    try:
        when = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        parser.error(f"--due {text!r}: not a date and time in ISO 8601 (e.g. 2026-12-01T23:59+01:00)")
    return when.timestamp()


def main(argv=None):
    """The command line; exit 0, 1 or 2, never a traceback: a failure of the grader's own is one line saying so."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 2
    except Exception as exc:   # a grader bug: said as such, in one line, with nothing of the inputs' secrets
        print(f"error: the grader failed ({type(exc).__name__}: {clean(str(exc), 300)}); this is a bug of the "
              "grader's, not of the submission: please report it", file=sys.stderr)
        return 2


def _main(argv):
    commands = {"release": _release, "gradescope": _gradescope, "gradebook": _gradebook, "similar": _similar}
    if argv[:1] and argv[0] in commands:
        return commands[argv[0]](argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    _times(parser, args)
    _seed(parser, args)
    if not args.batch:
        for flag, value in (("--csv", args.csv), ("--jobs", args.jobs), ("--feedback", args.feedback),
                            ("--student-pattern", args.student_pattern), ("--due", args.due),
                            ("--late-penalty", args.late_penalty or None),
                            ("--policy", None if args.policy == "latest" else args.policy)):
            if value is not None:
                parser.error(f"{flag} goes with --batch DIR")
    else:
        if args.submission:
            parser.error("give either a SUBMISSION or --batch DIR, not both")
        if not args.csv and not args.json:
            parser.error("--batch needs --csv FILE (the gradebook) or --json (the gradebook on stdout)")
        _class_source(parser, "--batch ", args.batch)
        if args.csv:
            _writable(parser, "--csv", args.csv)  # before any grading
        if args.feedback:
            _writable(parser, "--feedback", args.feedback, folder_ok=True)
        if args.jobs is not None and not 1 <= args.jobs <= MAX_JOBS:
            parser.error(f"--jobs must be between 1 and {MAX_JOBS}, got {args.jobs}")
        if args.student_pattern:
            try:
                check_pattern(args.student_pattern)
            except ValueError as exc:
                parser.error(str(exc))
        if not (math.isfinite(args.late_penalty) and 0 <= args.late_penalty <= 100):
            parser.error(f"--late-penalty must be a percent between 0 and 100, got {args.late_penalty}")
        args.due = _due(parser, args.due)
    try:
        mode, warning = resolve(args.sandbox)
    except SandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if warning and args.batch:
        print(f"error: a class is graded in a sandbox or not at all, and bubblewrap cannot run here: "
              f"{clean(warning, 400)}\n  Install it (Debian/Ubuntu: apt-get install bubblewrap; "
              "see exercises/README.md), "
              "or pass --sandbox process to grade these files in ordinary processes, unsandboxed.", file=sys.stderr)
        return 2
    if warning:
        print(warning, file=sys.stderr)
    options = {"timeout": args.timeout, "max_seconds": args.max_seconds or default_max_seconds(args.timeout),
               "mode": mode, "seed": args.seed}
    if args.batch:
        return _batch(args, options)
    if not args.submission:
        parser.error("give a SUBMISSION file, --batch DIR, or a command (release, gradescope, gradebook, similar)")
    try:
        report = _grade_one(args.submission, args.exercise, options)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report.to_json() if args.json else report.table())
    if report.error:
        print(f"cannot grade {report.source}: {clean(report.error, 2000)}", file=sys.stderr)  # learner text: cleaned
    return report.exit_code


def check_pattern(pattern):
    """`pattern` compiled, or ValueError: it must be a regular expression with a group named `student`."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"--student-pattern {pattern!r} is not a regular expression: {exc}") from None
    if "student" not in compiled.groupindex:
        raise ValueError(f"--student-pattern {pattern!r} has no group (?P<student>...) for the student id")
    return compiled


def _grade_one(path, exercise, options):
    """One file (or one upload: a folder, a zip) through the intake, graded in a process of its own."""
    if not os.path.lexists(path):
        raise ValueError(f"no such file: {path}")
    with tempfile.TemporaryDirectory(prefix="specdec-one-") as work:
        upload = intake.read_path(path, work)
        if upload.problem:
            raise ValueError(f"cannot grade {upload.name}: {upload.problem}")
        chosen = intake.choose(upload, exercise)
        named = [n for n in chosen if n]
        if not named:
            raise ValueError(f"cannot tell the exercise from the file name {upload.name!r}: pass --exercise ex01 "
                             "(or name the file ex01_...)")
        if len(named) > 1:
            raise ValueError(f"{upload.name} holds files of {', '.join(sorted(named))}: grade one file, or pass "
                             "--exercise")
        file, rest = chosen[named[0]]
        report = grade_settled(file.path, named[0], display=file.name, **options)
        report.files = [f"{file.name}: graded"] + [f"{r.name}: another file (not graded)" for r in rest] \
            if rest else []
        return report


def _batch(args, options):
    try:
        reports = grade_folder(args.batch, args.exercise, args.jobs or 2, pattern=args.student_pattern,
                               policy=args.policy, due=args.due, late_penalty=args.late_penalty, **options)
        if args.csv:
            written, kept, other_seed = gradebook.update(args.csv, reports, args.seed, args.policy)
        if args.feedback:
            feedback.write(reports, args.feedback)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(gradebook.to_json(reports, args.seed))
    out = sys.stderr if args.json else sys.stdout   # with --json, stdout holds the one JSON document
    errors = [r for r in reports if r.status == "error"]
    line = f"{len(reports)} rows (students x exercises): {len(reports) - len(errors)} graded"
    if errors:
        line += f", {len(errors)} not graded (the gradebook's error column says why)"
    regraded = [r for r in reports if r.regraded]
    if regraded:
        line += f", {len(regraded)} graded again alone (a limit stopped them, or the machine was busy)"
    if args.csv:
        line += f" -> {args.csv} ({written} rows written" + (f", {kept} kept from before" if kept else "") + ")"
    print(line, file=out)
    if args.csv and other_seed:
        print(f"warning: {other_seed} rows kept in {args.csv} were graded with another seed", file=out)
    if args.feedback:
        print(f"feedback for each entry -> {args.feedback} (index.csv lists them)", file=out)
    flagged = sorted({r.similar.split(":")[0] for r in reports if r.similar})
    if flagged:
        print(f"similar files: {len(flagged)} groups (the gradebook's similar column):", file=out)
        for r in reports:
            if r.similar:
                print(f"  {clean(r.source, 200)}: {clean(r.similar, 400)}", file=out)
    return 0


def _release(argv):
    from .release import release
    parser = argparse.ArgumentParser(prog=f"{PROG} release", description="Write the exercises as learners get "
                                     "them (statements, stubs, notebooks and a checker of the public and practice "
                                     "cases), without any solution, into a new or empty folder.")
    parser.add_argument("out", metavar="OUT", help="the folder to write (new or empty)")
    parser.add_argument("--exercise", choices=list(FOLDERS), metavar="exNN", action="append",
                        help="release only this exercise (repeat for several; default: all)")
    args = parser.parse_args(argv)
    try:
        written = release(args.out, exercises=args.exercise)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"released {len(written)} files for learners -> {args.out} (no solutions; the checker: "
          f"pip install {os.path.join(args.out, 'checker')})")
    return 0


def _gradescope(argv):
    from .gradescope import build
    parser = argparse.ArgumentParser(prog=f"{PROG} gradescope", description="Build the autograder zip Gradescope "
                                     "takes (setup.sh and run_autograder at its root) for one exercise.")
    parser.add_argument("--exercise", choices=list(FOLDERS), metavar="exNN", required=True)
    parser.add_argument("--seed", type=int, help="the secret seed of the hidden cases (default $SPECDEC_GRADE_SEED); "
                        "it stays inside the zip")
    parser.add_argument("--out", required=True, help="the zip file to write, e.g. autograder.zip")
    parser.add_argument("--timeout", type=float, default=10.0, help="CPU seconds per case (default 10)")
    args = parser.parse_args(argv)
    _times(parser, args)
    _seed(parser, args)
    if not args.seed:
        parser.error("--seed (or SPECDEC_GRADE_SEED) is required: the shipped cases (seed 0) are public")
    _writable(parser, "--out", args.out)
    try:
        build(args.exercise, args.seed, args.out, timeout=args.timeout)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out}: upload it as the assignment's autograder (Gradescope: Configure Autograder, zip file); "
          f"seed fingerprint {gradebook.seed_fingerprint(args.seed)}")
    return 0


def _gradebook(argv):
    parser = argparse.ArgumentParser(prog=f"{PROG} gradebook", description="Merge several exercises' gradebooks "
                                     "into one CSV, a row per student and a column per exercise (its total), in a "
                                     "layout an LMS imports.", epilog=gradebook.__doc__.split("\n\n")[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", metavar="OUT.csv", help="the merged CSV to write")
    parser.add_argument("gradebooks", metavar="GRADEBOOK.csv", nargs="+", help="gradebooks written by --batch --csv")
    parser.add_argument("--lms", choices=sorted(gradebook.LAYOUTS), default="plain",
                        help="the columns: canvas, moodle or plain (default)")
    args = parser.parse_args(argv)
    _writable(parser, "OUT.csv", args.out)
    try:
        text, warnings = gradebook.merge(args.gradebooks, args.lms)
        with open(args.out, "w", newline="", encoding="utf-8") as f:
            f.write(text)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out}: {text.count(chr(10)) - 1} students, layout {args.lms}")
    for warning in warnings:
        print(f"warning: {clean(warning, 400)}")
    return 0


def _similar(argv):
    from . import similar
    parser = argparse.ArgumentParser(prog=f"{PROG} similar", description="Flag files that are the same, or nearly, "
                                     "across several batches: class folders, LMS downloads (Canvas, Moodle) and "
                                     "Gradescope's exported submissions, each with its scores.")
    parser.add_argument("sources", metavar="SOURCE", nargs="+", help="a class folder or an LMS's or Gradescope's "
                        "zip (or unpacked export), read as --batch reads it")
    parser.add_argument("--exercise", choices=list(FOLDERS), metavar="exNN", required=True)
    parser.add_argument("--gradebook", metavar="CSV", action="append", default=[],
                        help="a gradebook whose finals to show beside each flagged file (repeat for several)")
    parser.add_argument("--student-pattern", metavar="REGEX", help="as for --batch")
    args = parser.parse_args(argv)
    for source in args.sources:
        _class_source(parser, "", source)
    if args.student_pattern:
        try:
            check_pattern(args.student_pattern)
        except ValueError as exc:
            parser.error(str(exc))
    try:
        finals = {}
        for path in args.gradebook:
            for row in gradebook.read(path)[1]:
                if row["exercise"] == args.exercise:
                    finals[row["student"]] = row["final"] or gradebook.NOT_GRADED
        flagged, count = similar.across(args.sources, args.exercise, args.student_pattern, finals)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{count} files of {args.exercise} in {len(args.sources)} sources: {len(flagged)} flagged")
    for line in flagged:
        print(f"  {clean(line, 600)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
