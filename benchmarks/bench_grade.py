"""A term dry-run: classes through every door, quiet and beside a CPU hog, every row checked (benchmarks/README.md).

    python benchmarks/bench_grade.py            # classes of 60 (Canvas, Moodle, Gradescope), an ex04 class of 20
    python benchmarks/bench_grade.py --quick    # classes of 12 and 6

What it measures, each as an instructor runs it (fresh `python -m specdec.grade` processes, a secret seed, with
bubblewrap):
1. one file alone: the wall time of `python -m specdec.grade FILE`, interleaved over the kinds of file, median;
2. an honest class of N ex01 files (correct ones written several ways, notebooks, NumPy, the catalogue's mistakes
   as a learner writes them, stubs, a file that does not parse), with resubmissions: through a Canvas download
   (`--batch submissions.zip`, a student's second attachment, a late one), a Moodle download and Gradescope
   (`run_autograder` once per file, in its container layout). Every row must equal the score its file gets when
   graded alone; the time of each class, and each row's own time (the gradebook's `seconds`);
3. the Canvas class again with a CPU hog on every core (two spinners, each in a session of its own): the same
   scores, row for row, and its time;
4. an ex04 class (correct samplers and catalogued mistakes), quiet and beside the hog;
5. one uncatalogued mistake in 10 copies (renamed, reformatted, commented): the spread of their scores.
The load average is printed with every number. Exits 1 if a row differs from its file's score alone.
"""

import argparse
import contextlib
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions")
SEED = 606_060_606_060
EX01 = ["good_plain.py", "numpy_correct.py", "good_line_separators.ipynb", "honest/good_display.ipynb",
        "honest/good_matplotlib_plot.ipynb", "honest/good_latin1.py", "wrong_no_stop.py", "wrong_strict_less.py",
        "wrong_target_argmax.py", "wrong_tie_high.py", "wrong_no_bonus.py", "wrong_swap_pq.py", "broken_syntax.py"]
EX04 = ["good_choices.py", "wrong_no_stop.py", "wrong_argmax_not_sampled.py", "wrong_resample_from_p.py",
        "wrong_accept_with_p.py"]
HOG = "import os, time\nos.setsid()\nwhile True:\n    pass\n"


def run(*args, cwd=ROOT):
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "specdec.grade", *args], capture_output=True, text=True, cwd=cwd)
    return time.perf_counter() - start, result


def load():
    return f"load {os.getloadavg()[0]:.1f}"


def alone(path, exercise):
    """(score + bonus, status) of one file graded alone, with the class's seed."""
    _, result = run(path, "--exercise", exercise, "--seed", str(SEED), "--json")
    if result.returncode not in (0, 1, 2) or not result.stdout.strip():
        raise SystemExit(f"{path}: {result.stderr[-400:]}")
    doc = json.loads(result.stdout)
    return doc["score"] + doc["bonus"], doc["status"]


def variants(source, n):
    """`n` honest variants of one file's source: the same function, other names, spacing or comments."""
    text = open(source, encoding="utf-8", errors="replace").read()
    out = []
    for i in range(n):
        t = text
        if i % 3 == 1:
            t = "# my own work, version %d\n" % i + t
        if i % 3 == 2:
            t = t.replace("accepted", f"kept{i}")
        out.append(t)
    return out


def make_class(folder, files, exercise, size):
    """`size` (student, file name, source path or text) entries: each file of `files` in turn, written a few ways."""
    entries = []
    for i in range(size):
        name = files[i % len(files)]
        path = os.path.join(SUBS, exercise, name)
        if name.endswith(".py") and i >= len(files):
            text = variants(path, 3)[(i // len(files)) % 3]
            target = os.path.join(folder, f"v{i}_{os.path.basename(name)}")
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
            path = target
        entries.append((f"student{i:03d}", 10000 + i, path))
    return entries


def canvas_zip(out, entries, exercise, resubmit=True):
    """A Canvas download; the first three students also have an older, wrong attachment (the latest counts)."""
    with zipfile.ZipFile(out, "w") as z:
        for n, (student, uid, path) in enumerate(entries):
            ext = os.path.splitext(path)[1]
            late = "_LATE" if n % 10 == 9 else ""
            z.write(path, f"{student}{late}_{uid}_{2 * uid + 1}_{exercise}{ext}")
            if resubmit and n < 3:
                z.writestr(f"{student}_{uid}_{2 * uid}_{exercise}_old.py", "def broken(:\n")
    return out


def moodle_zip(out, entries, exercise):
    with zipfile.ZipFile(out, "w") as z:
        for student, uid, path in entries:
            z.write(path, f"Student {student}_{uid}_assignsubmission_file_/{exercise}{os.path.splitext(path)[1]}")
    return out


def rows_of(book):
    with open(book, newline="", encoding="utf-8") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def check(door, book, expected):
    rows = rows_of(book)
    wrong = [(uid, rows.get(str(uid), {}).get("final"), want) for uid, want in expected.items()
             if str(rows.get(str(uid), {}).get("final") or "not graded") != str(want)]
    seconds = [float(r["seconds"]) for r in rows.values() if r["seconds"]]
    print(f"  {door}: {len(rows)} rows, {len(wrong)} differ from the file alone"
          + (f" {wrong[:5]}" if wrong else "") + (f"; a row's own time median {statistics.median(seconds):.2f} s"
                                                 f" [{min(seconds):.2f}-{max(seconds):.2f}]" if seconds else ""))
    return not wrong


def gradescope_door(entries, exercise, work):
    """Each file through run_autograder in the container layout (tests/grader/test_gradescope.py's), as root."""
    zip_path = os.path.join(work, "autograder.zip")
    t, result = run("gradescope", "--exercise", exercise, "--seed", str(SEED), "--out", zip_path)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    scores, start = {}, time.perf_counter()
    os.makedirs("/autograder", exist_ok=True)             # the mount point bwrap binds each home on
    for student, uid, path in entries:
        home = os.path.join(work, "gs", student)
        for d in ("source", "submission", "results"):
            os.makedirs(os.path.join(home, d))
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(os.path.join(home, "source"))
        shutil.copy(os.path.join(home, "source", "run_autograder"), os.path.join(home, "run_autograder"))
        os.chmod(os.path.join(home, "run_autograder"), 0o755)
        shutil.copy(path, os.path.join(home, "submission", os.path.basename(path)))
        argv = ["bwrap", "--dev-bind", "/", "/", "--bind", home, "/autograder"]
        subprocess.run(argv + ["/autograder/run_autograder"], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:/usr/bin:/bin"))
        with open(os.path.join(home, "results", "results.json")) as f:
            scores[uid] = json.load(f)["score"]
    return scores, time.perf_counter() - start


@contextlib.contextmanager
def hog(on=True):
    """A CPU hog on every core while the block runs (on=False: none), killed at its end."""
    spinners = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(os.cpu_count() or 2)] if on else []
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="classes of 12 and 6")
    args = parser.parse_args(argv)
    size, size04 = (12, 6) if args.quick else (60, 20)
    ok = True
    print(f"{load()}, {os.cpu_count()} cores; seed {SEED}")
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as work:
        singles = {"ex01 correct (plain)": ("ex01", os.path.join(SUBS, "ex01", "good_plain.py")),
                   "ex01 with NumPy (graded twice)": ("ex01", os.path.join(SUBS, "ex01", "numpy_correct.py")),
                   "ex01 wrong (with diagnosis)": ("ex01", os.path.join(SUBS, "ex01", "wrong_no_stop.py")),
                   "ex04 correct sampler": ("ex04", os.path.join(ROOT, "exercises", "ex04_sampler", "solution.py")),
                   "ex04 wrong (with diagnosis)": ("ex04", os.path.join(SUBS, "ex04", "wrong_no_stop.py"))}
        times = {k: [] for k in singles}
        for _ in range(2 if args.quick else 5):
            for label, (exercise, path) in singles.items():
                times[label].append(run(path, "--exercise", exercise, "--seed", str(SEED))[0])
        print(f"one file alone, median [min-max] of {len(times[label])} interleaved runs ({load()}):")
        for label, ts in times.items():
            print(f"  {label}: {statistics.median(ts):.2f} s [{min(ts):.2f}-{max(ts):.2f}]")

        os.makedirs(os.path.join(work, "files"))
        entries = make_class(os.path.join(work, "files"), EX01, "ex01", size)
        expected = {}
        cache = {}
        for student, uid, path in entries:
            key = open(path, "rb").read()
            if key not in cache:
                cache[key] = alone(path, "ex01")
            total, status = cache[key]
            expected[uid] = "not graded" if status == "error" else total
        downloads = {"Canvas": canvas_zip(os.path.join(work, "canvas.zip"), entries, "ex01"),
                     "Moodle": moodle_zip(os.path.join(work, "moodle.zip"), entries, "ex01")}
        print(f"an honest class of {size} ex01 files (+3 older attachments in Canvas), --jobs 2:")
        for door, download in downloads.items():
            book = os.path.join(work, f"{door}.csv")
            t, result = run("--batch", download, "--exercise", "ex01", "--seed", str(SEED), "--csv", book,
                            "--jobs", "2")
            print(f"  {door} download: {t:.1f} s for the class ({t / size:.2f} s a file), {load()}")
            ok &= check(door, book, expected)
        if os.geteuid() == 0 and shutil.which("bwrap"):
            scores, t = gradescope_door(entries, "ex01", work)
            wrong = [uid for uid, s in scores.items() if str(expected[uid]) not in (str(s), "not graded")]
            print(f"  Gradescope: {t:.1f} s for {len(scores)} runs of run_autograder ({t / size:.2f} s a file), "
                  f"{len(wrong)} differ from the file alone, {load()}")
            ok &= not wrong
        with hog():
            time.sleep(2)
            book = os.path.join(work, "canvas_loaded.csv")
            t, result = run("--batch", downloads["Canvas"], "--exercise", "ex01", "--seed", str(SEED), "--csv", book,
                            "--jobs", "2")
            print(f"  Canvas download beside a CPU hog on every core: {t:.1f} s ({t / size:.2f} s a file), {load()}")
            ok &= check("Canvas, loaded", book, expected)

        entries04 = [(f"s{i:03d}", 20000 + i, os.path.join(SUBS, "ex04", EX04[i % len(EX04)])
                      if i % len(EX04) else os.path.join(ROOT, "exercises", "ex04_sampler", "solution.py"))
                     for i in range(size04)]
        expected04 = {}
        for _, uid, path in entries04:
            total, status = alone(path, "ex04")
            expected04[uid] = "not graded" if status == "error" else total
        download = moodle_zip(os.path.join(work, "ex04.zip"), entries04, "ex04")
        print(f"an ex04 class of {size04}:")
        for loaded in (False, True):
            with hog(loaded):
                book = os.path.join(work, f"ex04_{loaded}.csv")
                t, _ = run("--batch", download, "--exercise", "ex04", "--seed", str(SEED), "--csv", book, "--jobs",
                           "2")
                print(f"  {'beside a CPU hog' if loaded else 'quiet'}: {t:.1f} s ({t / size04:.2f} s a file), {load()}")
                ok &= check("ex04" + (", loaded" if loaded else ""), book, expected04)

        import importlib.util   # the mistake tests/grader/test_grading_key.py writes four ways
        spec = importlib.util.spec_from_file_location("keyed", os.path.join(ROOT, "tests", "grader",
                                                                            "test_grading_key.py"))
        sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]   # the engine first: tests/grader is not the package
        keyed = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(keyed)
        MISTAKE, NAMES = keyed.MISTAKE, keyed.NAMES
        spread = []
        for i in range(10):
            names = NAMES[i % 2]
            code = MISTAKE.format(**names)
            code = ("# copy %d\n" % i) + (code.replace(" = ", "  =  ") if i % 3 == 0 else code)
            path = os.path.join(work, f"ex01_copy{i}.py")
            with open(path, "w") as f:
                f.write(code)
            spread.append(alone(path, "ex01")[0])
        print(f"one uncatalogued mistake in 10 copies (renamed, reformatted, commented): scores {sorted(set(spread))}"
              f" (spread {max(spread) - min(spread)})")
        ok &= len(set(spread)) == 1
    print(f"{load()} after; every row right: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
