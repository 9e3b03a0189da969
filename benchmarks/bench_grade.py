"""How long grading takes: one submission, and a class of 50 with --jobs 2 (tables: benchmarks/README.md).

    python benchmarks/bench_grade.py            # full: 5 single runs per file, a 50-file class
    python benchmarks/bench_grade.py --quick    # 2 single runs per file, a 20-file class
    python benchmarks/bench_grade.py --class-only --size 300 --feedback   # a class of 300, with feedback files

Every number is the wall time of a fresh `python -m specdec.grade` process, as an instructor or a
learner runs it: interpreter start, imports, generating the hidden cases, the sandbox(es), judging.
Nothing is warmed in-process. Single runs alternate between files (interleaved), and the table shows
their median and range. The class mixes what a real folder holds: correct plain-Python and NumPy
files, each catalogued mistake, stubs, a file that crashes at import and one that loops on one case
(it costs a per-case time limit). The machine's load average is printed with the numbers.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions", "ex01")
SINGLE = [("ex01 correct (plain)", os.path.join(SUBS, "good_plain.py"), "ex01"),
          ("ex01 with NumPy (graded twice)", os.path.join(SUBS, "numpy_correct.py"), "ex01"),
          ("ex01 wrong (with diagnosis)", os.path.join(SUBS, "wrong_no_stop.py"), "ex01"),
          ("ex04 correct (8000 calls, 4000 replayed)", os.path.join(ROOT, "exercises", "ex04_sampler", "solution.py"),
           "ex04"),
          ("ex04 wrong (with diagnosis)", os.path.join(ROOT, "tests", "submissions", "ex04", "wrong_no_stop.py"),
           "ex04")]
CLASS = ["good_plain.py"] * 4 + ["numpy_correct.py"] * 2 + [f"wrong_{m}.py" for m in (
    "no_stop", "strict_less", "target_argmax", "tie_high", "bonus_without_row_k", "ignore_k0", "no_length_check",
    "swap_pq")] + ["broken_syntax.py", "broken_raises_at_import.py", "hostile_loop_k0.py"]


def grade(*args):
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "specdec.grade", *args], capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise SystemExit(f"grading failed ({result.returncode}): {result.stderr[-500:]}")
    return seconds, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and a 20-file class")
    parser.add_argument("--size", type=int, help="the class's size (default 50, 20 with --quick)")
    parser.add_argument("--class-only", action="store_true", help="time the class alone")
    parser.add_argument("--feedback", action="store_true", help="the class also writes every learner's feedback")
    args = parser.parse_args(argv)
    repeats, size = (2, 20) if args.quick else (5, 50)
    size = args.size or size
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    times = {label: [] for label, _, _ in SINGLE}
    sandbox = ""
    for _ in range(0 if args.class_only else repeats):  # interleaved: each round grades every file once
        for label, path, exercise in SINGLE:
            seconds, result = grade(path, "--exercise", exercise, "--json")
            times[label].append(seconds)
            sandbox = sandbox or result.stdout.split('"sandbox": "')[1].split('"')[0]
    if not args.class_only:
        print(f"\none submission, fresh process each time (sandbox: {sandbox}; {repeats} interleaved runs)")
        print(f"{'file':40s} {'median s':>9s} {'min s':>7s} {'max s':>7s}")
        for label, values in times.items():
            print(f"{label:40s} {statistics.median(values):9.2f} {min(values):7.2f} {max(values):7.2f}")
    with tempfile.TemporaryDirectory() as folder:
        for i in range(size):
            name = CLASS[i % len(CLASS)]
            shutil.copy(os.path.join(SUBS, name), os.path.join(folder, f"learner{i:02d}_{name}"))
        extra = ["--feedback", os.path.join(folder, "feedback")] if args.feedback else []
        seconds, result = grade("--batch", folder, "--exercise", "ex01", "--csv", os.path.join(folder, "g.csv"),
                                "--jobs", "2", "--seed", "7719328466051", *extra)
        rows = open(os.path.join(folder, "g.csv")).read().count("\n") - 1
    loopers = sum(CLASS[i % len(CLASS)].startswith("hostile_loop") for i in range(size))
    print(f"\na class of {size} ex01 files (the mix in CLASS; {loopers} of them loop on 2 cases, each costing two "
          f"10 s time limits), --jobs 2, a secret seed" + (", --feedback" if args.feedback else ""))
    print(f"{rows} rows in {seconds:.1f} s = {seconds / size:.2f} s per file")
    print(f"\nload average after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
