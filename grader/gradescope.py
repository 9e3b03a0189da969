"""Gradescope: the autograder zip it takes, and what runs in its container for each submission.

    python -m specdec.grade gradescope --exercise ex01 --seed S --out autograder.zip

The zip (Gradescope's autograder specification, https://gradescope-autograders.readthedocs.io/en/latest/specs/)
holds at its root `setup.sh` (run once, as root, when Gradescope builds the image on its Ubuntu base:
installs Python 3, pip, bubblewrap, and NumPy, IPython and tqdm for submissions that use them) and
`run_autograder` (run for every submission: `python3` from PATH, the one setup.sh provisioned, on
the kit under /autograder/source), plus `config.json` (exercise, seed, time limits) and of the kit only
what grading the one exercise imports (`kit_files`: the engine, that exercise's cases and the library's
reference; no other exercise, no solution file).

For each submission, `run()`:
1. closes the grader's folders to everyone but root: /autograder/source (the kit, the seed) and
   /autograder/results (where results.json goes) become mode 0700;
2. reads /autograder/submission through the intake (`intake.read_path`), as untrusted bytes: a link
   (from a GitHub or GitLab upload, or a zip) is refused, never followed as root; of several `.py` or
   `.ipynb` files, the one named like the exercise counts, else the newest (`intake.choose`), and the
   output names the others; none gives a result of 0 that says why;
3. grades it as the batch grader does (`batch.grade_settled`: once more, alone, if a time limit stopped
   it), in a grading process of its own: in a bubblewrap sandbox
   where the container allows one, else ("user" isolation) as a fresh unprivileged uid with the
   same resource limits and seccomp filter, which can neither read /autograder/source nor write
   /autograder/results; the output says which isolation applied;
4. writes /autograder/results/results.json: the total (score plus bonus), one test per case (name,
   score, max_score, status, output), the public cases visible, the hidden ones `after_published`
   (students see them once the instructor publishes grades), the bonus as a test of its own, the
   execution time in whole seconds, and stdout hidden from students (`stdout_visibility`). No seed, no
   hidden input or answer, no path of the kit reaches it; the instructor's seed fingerprint is in
   `extra_data` (instructors only). A results.json is written for every input, and if the grader itself
   fails, one that says so.

The assignment's point total on Gradescope: the exercise's maximum (100; ex01's plain-Python bonus can take a
score to 110).

`RESULTS_SCHEMA` is the JSON Schema of results.json, written from that specification.
"""

import json
import os
import stat
import sys
import time
import zipfile

from .gradebook import seed_fingerprint

KIT = ("specdec", "grader", "exercises")      # the packages whose modules grading imports (`kit_files`)
SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq python3 python3-pip bubblewrap
# NumPy for submissions that use it (graded without the plain-Python bonus), IPython for notebooks.
python3 -m pip install --quiet "numpy>=1.26,<3" "ipython>=8" "tqdm>=4.66" \\
  || python3 -m pip install --quiet --break-system-packages "numpy>=1.26,<3" "ipython>=8" "tqdm>=4.66"
"""
RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission, as root, in /autograder. python3: the one setup.sh installed.
cd /autograder/source
PYTHONPATH=/autograder/source exec python3 -c 'import sys; from grader.gradescope import run; sys.exit(run())' "$@"
"""
VISIBILITY = ("hidden", "after_due_date", "after_published", "visible")
RESULTS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Gradescope autograder results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/)",
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "visibility": {"enum": list(VISIBILITY)},
        "stdout_visibility": {"enum": list(VISIBILITY)},
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "score": {"type": "number"}, "max_score": {"type": "number"},
                "status": {"enum": ["passed", "failed"]},
                "name": {"type": "string"}, "number": {"type": "string"},
                "output": {"type": "string"},
                "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "visibility": {"enum": list(VISIBILITY)}, "extra_data": {"type": "object"},
            },
            "additionalProperties": False,
        }},
        "leaderboard": {"type": "array"},
    },
    "anyOf": [{"required": ["score"]}, {"required": ["tests"]}],
    "additionalProperties": False,
}


CLOSURE = """
import json, os, sys
root = sys.argv[1]
sys.path.insert(0, root)
import importlib
importlib.import_module("exercises." + sys.argv[2] + ".grading")
for name in ("grader.gradescope", "grader.batch", "grader.submission", "grader.notebook", "grader.feedback"):
    importlib.import_module(name)
files = {os.path.relpath(m.__file__, root) for m in list(sys.modules.values())
         if getattr(m, "__file__", None) and os.path.abspath(m.__file__).startswith(root + os.sep)}
print(json.dumps(sorted(files)))
"""


def kit_files(exercise, root=None):
    """What the autograder ships (paths relative to `root`): the whole engine (every module of `grader/`, so that
    an import made inside a function, found only when it runs, is there too: once `grader/inprocess.py` was not,
    and every upload scored 0), and of the rest of the kit what grading `exercise` imports, found by importing
    it in a fresh interpreter: that exercise's cases and the library's reference; no other exercise, no solution,
    no notebook, no model."""
    import subprocess
    from .registry import FOLDERS, ROOT
    root = os.path.abspath(root or ROOT)
    found = subprocess.run([sys.executable, "-c", CLOSURE, root, FOLDERS[exercise]], capture_output=True, text=True,
                           cwd=root, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), timeout=120)
    if found.returncode != 0:
        raise ValueError(f"cannot list what grading {exercise} needs: {found.stderr.strip()[-300:]}")
    engine = {os.path.relpath(os.path.join(folder, name), root)
              for folder, _, names in os.walk(os.path.join(root, "grader")) for name in names if name.endswith(".py")}
    files = set(json.loads(found.stdout)) | engine
    return sorted(f for f in files if f.endswith(".py") and not f.endswith("solution.py")
                  and f.split(os.sep)[0] in KIT)


def build(exercise, seed, out, timeout=10.0, root=None):
    """Write the autograder zip for `exercise` with hidden cases from `seed` to `out`."""
    from .registry import FOLDERS, ROOT
    root = root or ROOT
    if exercise not in FOLDERS:
        raise ValueError(f"unknown exercise {exercise!r}: expected one of {', '.join(FOLDERS)}")
    files = kit_files(exercise, root)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text, mode in (("setup.sh", SETUP, 0o755), ("run_autograder", RUN, 0o755),
                                 ("config.json", json.dumps({"exercise": exercise, "seed": int(seed),
                                                             "timeout": float(timeout)}), 0o600)):
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | mode) << 16
            z.writestr(info, text)
        for path in files:
            z.write(os.path.join(root, path), path)
    return out


def results(report, isolation, seconds, seed, chosen=""):
    """The results.json document for a Report (see the module docstring). `execution_time` is whole seconds:
    a finer one would tell a file's own timings back to its author."""
    tests = [{"name": c.name + (" (hidden)" if c.hidden else ""), "score": c.earned, "max_score": c.points,
              "status": "passed" if c.passed else "failed", "output": _text(c),
              "visibility": "after_published" if c.hidden else "visible"} for c in report.cases]
    if report.bonus_points:
        tests.append({"name": "plain-Python bonus", "score": report.bonus, "max_score": report.bonus_points,
                      "status": "passed" if report.bonus else "failed", "output": report.bonus_note,
                      "visibility": "visible"})
    lines = [line for line in report.lines() if line.strip()]
    output = "\n".join([lines[0], f"isolation: {isolation}"] + ([chosen] if chosen else [])
                       + ([report.notebook_note] if report.notebook_note else [])
                       + ([report.diagnosis] if report.diagnosis else [])
                       + ([f"cannot grade: {report.error}"] if report.error else []) + [report.score_line()])
    return {"score": report.score + report.bonus, "execution_time": round(seconds), "output": output,
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"seed_fingerprint": seed_fingerprint(seed), "status": report.status}}


def _text(case):
    from .report import clean
    return "\n".join([clean(case.message, 600)] + [clean(d, 420) for d in case.detail]).strip()


FAILED = ("The autograder could not grade this submission: the autograder itself failed ({kind}), not your "
          "code. Your instructor can see the error in this submission's autograder output; ask them to regrade it, or "
          "resubmit later.")


def failed(exc, started):
    """The results.json of an autograder that failed, and the report of it for the instructor.

    The traceback goes to the autograder's standard output, which Gradescope shows to instructors only
    (`stdout_visibility` hidden), and into `extra_data["autograder_error"]`, which the instructor's export of the
    submissions holds; the student reads that it is the autograder's failure and what to do, nothing of the kit.
    """
    import traceback
    from .report import clean
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
    print("AUTOGRADER ERROR (shown to instructors only): the autograder failed; the submission was not graded.\n"
          + trace, flush=True)
    document = _zero(FAILED.format(kind=type(exc).__name__), started)
    document["extra_data"] = {"status": "autograder error",
                              "autograder_error": clean(f"{type(exc).__name__}: {exc}", 1000)}
    return document


def _lock(path):
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, 0o700)


def _zero(message, started):
    return {"score": 0, "execution_time": round(time.monotonic() - started), "output": message,
            "visibility": "visible", "stdout_visibility": "hidden", "tests": []}


def _grade(home, started):
    """The results.json document for the submission in `home`/submission."""
    import tempfile
    from . import intake
    from .batch import grade_settled
    from .report import clean
    from .sandbox import bwrap_problem
    with open(os.path.join(home, "source", "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    problem_bwrap = bwrap_problem()
    if not problem_bwrap:
        mode, isolation = "bwrap", "a bubblewrap sandbox (namespaces, seccomp, resource limits)"
    elif os.geteuid() == 0:
        mode, isolation = "user", (f"no bubblewrap here ({problem_bwrap}): a fresh unprivileged user with resource "
                                   "limits and a seccomp filter, which cannot read the grader or write the results")
    else:
        mode, isolation = "process", f"no bubblewrap here ({problem_bwrap}): an ordinary process (not isolated)"
    with tempfile.TemporaryDirectory(prefix="specdec-gradescope-") as work:
        upload = intake.read_path(os.path.join(home, "submission"), work)   # untrusted bytes, links refused
        chosen = intake.choose(upload, config["exercise"]).get(config["exercise"])
        others = [f"{name}: {why}" for name, why in upload.others]
        if chosen is None:
            why = upload.problem if upload.problem and "nothing to grade" not in upload.problem else \
                "No .py or .ipynb file was submitted: upload the one file you worked in."
            return _zero("\n".join([clean(why, 400)] + [clean(o, 300) for o in others[:10]]), started)
        file, rest = chosen
        note = f"graded: {file.name}" + (f" (of {len(rest) + 1} files: the one named like the exercise, else the "
                                         "newest; the others were not graded: "
                                         + ", ".join(r.name for r in rest[:5]) + ")" if rest else "")
        report = grade_settled(file.path, config["exercise"], display=file.name, timeout=config["timeout"],
                               mode=mode, seed=config["seed"])
        return results(report, isolation, time.monotonic() - started, config["seed"], clean(note, 600))


def run(home="/autograder"):
    """Grade the submission in `home`/submission and write `home`/results/results.json (see the docstring).

    A results.json is written whatever happens: for any upload (none, several files, a link, a folder, a binary
    or empty file), and if the grader itself fails, a result that says it is the autograder's failure.
    """
    started = time.monotonic()
    source, out = os.path.join(home, "source"), os.path.join(home, "results")
    os.makedirs(out, exist_ok=True)
    _lock(source)
    _lock(out)
    try:
        document = _grade(home, started)
    except Exception as exc:   # the grader's own failure: never the student's, and the instructor is told
        document = failed(exc, started)
    tmp = os.path.join(out, ".results.json.tmp")
    if os.path.lexists(tmp):
        os.unlink(tmp)
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644), "w",
              encoding="utf-8") as f:
        json.dump(document, f)
    os.replace(tmp, os.path.join(out, "results.json"))  # whatever a submission left there is replaced
    print(f"graded: score {document['score']}", file=sys.stderr)
    return 0

