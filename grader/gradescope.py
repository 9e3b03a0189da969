"""Gradescope: the autograder zip it takes, and what runs in its container for each submission.

    python -m specdec.grade gradescope --exercise ex01 --seed S --out autograder.zip

The zip (Gradescope's autograder specification, https://gradescope-autograders.readthedocs.io/en/latest/specs/)
holds at its root `setup.sh` (run once, as root, when Gradescope builds the image on its Ubuntu base:
installs Python 3, pip, bubblewrap, and NumPy and IPython for submissions that use them) and
`run_autograder` (run for every submission: `python3` from PATH, the one setup.sh provisioned, on
the kit under /autograder/source), plus the kit itself and `config.json` (exercise, seed, time limits).

For each submission, `run()`:
1. closes the grader's folders to everyone but root: /autograder/source (the kit, the seed) and
   /autograder/results (where results.json goes) become mode 0700;
2. finds the one `.py` or `.ipynb` file in /autograder/submission (any name); none or several
   give a result of 0 that says so;
3. grades it as the batch grader does, in a grading process of its own: in a bubblewrap sandbox
   where the container allows one, else ("user" isolation) as a fresh unprivileged uid with the
   same resource limits and seccomp filter, which can neither read /autograder/source nor write
   /autograder/results; the output says which isolation applied;
4. writes /autograder/results/results.json: the total (score plus bonus), one test per case (name,
   score, max_score, status, output), the public cases visible, the hidden ones `after_published`
   (students see them once the instructor publishes grades), the bonus as a test of its own, the
   execution time, and stdout hidden from students (`stdout_visibility`). No seed, no hidden input
   or answer, no path of the kit reaches it; the instructor's seed fingerprint is in `extra_data`
   (instructors only).

`RESULTS_SCHEMA` is the JSON Schema of results.json, written from that specification.
"""

import json
import os
import shutil
import stat
import sys
import time
import zipfile

from .gradebook import seed_fingerprint

KIT = ("specdec", "grader", "exercises")      # the packages the grading imports (no notebooks, no models)
SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq python3 python3-pip bubblewrap
# NumPy for submissions that use it (graded without the plain-Python bonus), IPython for notebooks.
python3 -m pip install --quiet "numpy>=1.26,<3" "ipython>=8" \\
  || python3 -m pip install --quiet --break-system-packages "numpy>=1.26,<3" "ipython>=8"
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


def build(exercise, seed, out, timeout=10.0, root=None):
    """Write the autograder zip for `exercise` with hidden cases from `seed` to `out`."""
    from .registry import FOLDERS, ROOT
    root = root or ROOT
    if exercise not in FOLDERS:
        raise ValueError(f"unknown exercise {exercise!r}: expected one of {', '.join(FOLDERS)}")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text, mode in (("setup.sh", SETUP, 0o755), ("run_autograder", RUN, 0o755),
                                 ("config.json", json.dumps({"exercise": exercise, "seed": int(seed),
                                                             "timeout": float(timeout)}), 0o600)):
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | mode) << 16
            z.writestr(info, text)
        for package in KIT:
            for folder, dirs, files in os.walk(os.path.join(root, package)):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
                for f in sorted(files):
                    if f.endswith(".py"):
                        path = os.path.join(folder, f)
                        z.write(path, os.path.relpath(path, root))
    return out


def find_submission(folder):
    """(path, '') of the one .py/.ipynb file under `folder`, or (None, why there is none to grade)."""
    found = []
    for base, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__MACOSX")))
        found += [os.path.join(base, f) for f in sorted(files)
                  if f.endswith((".py", ".ipynb")) and not f.startswith(".")]
    if not found:
        return None, "No .py or .ipynb file was submitted: upload the one file you worked in."
    if len(found) > 1:
        names = ", ".join(os.path.relpath(f, folder) for f in found[:6])
        return None, f"{len(found)} files were submitted ({names}): upload only the one file you worked in."
    return found[0], ""


def results(report, isolation, seconds, seed):
    """The results.json document for a Report (see the module docstring)."""
    tests = [{"name": c.name + (" (hidden)" if c.hidden else ""), "score": c.earned, "max_score": c.points,
              "status": "passed" if c.passed else "failed", "output": _text(c),
              "visibility": "after_published" if c.hidden else "visible"} for c in report.cases]
    if report.bonus_points:
        tests.append({"name": "plain-Python bonus", "score": report.bonus, "max_score": report.bonus_points,
                      "status": "passed" if report.bonus else "failed", "output": report.bonus_note,
                      "visibility": "visible"})
    lines = [line for line in report.lines() if line.strip()]
    output = "\n".join([lines[0], f"isolation: {isolation}"] + ([report.diagnosis] if report.diagnosis else [])
                       + ([f"cannot grade: {report.error}"] if report.error else []) + [report.score_line()])
    return {"score": report.score + report.bonus, "execution_time": round(seconds, 3), "output": output,
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"seed_fingerprint": seed_fingerprint(seed), "status": report.status}}


def _text(case):
    from .report import clean
    return "\n".join([clean(case.message, 600)] + [clean(d, 420) for d in case.detail]).strip()


def _lock(path):
    if os.path.isdir(path):
        os.chmod(path, 0o700)


def run(home="/autograder"):
    """Grade the submission in `home`/submission and write `home`/results/results.json (see the docstring)."""
    from .batch import grade_apart
    from .sandbox import bwrap_problem
    started = time.monotonic()
    source, out = os.path.join(home, "source"), os.path.join(home, "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(source, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    _lock(source)
    _lock(out)
    path, problem = find_submission(os.path.join(home, "submission"))
    problem_bwrap = bwrap_problem()
    if not problem_bwrap:
        mode, isolation = "bwrap", "a bubblewrap sandbox (namespaces, seccomp, resource limits)"
    elif os.geteuid() == 0:
        mode, isolation = "user", (f"no bubblewrap here ({problem_bwrap}): a fresh unprivileged user with resource "
                                   "limits and a seccomp filter, which cannot read the grader or write the results")
    else:
        mode, isolation = "process", f"no bubblewrap here ({problem_bwrap}): an ordinary process (not isolated)"
    if path is None:
        document = {"score": 0, "execution_time": round(time.monotonic() - started, 3), "output": problem,
                    "visibility": "visible", "stdout_visibility": "hidden", "tests": []}
    else:
        # The submission's own copy, readable by the sandbox's user (its folder may be anyone's).
        report = grade_apart(path, config["exercise"], timeout=config["timeout"], mode=mode, seed=config["seed"])
        report.source = os.path.basename(path)
        document = results(report, isolation, time.monotonic() - started, config["seed"])
    tmp = os.path.join(out, ".results.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(document, f)
    os.replace(tmp, os.path.join(out, "results.json"))  # whatever a submission left there is replaced
    print(f"graded {path or 'nothing'}: score {document['score']} ({isolation})", file=sys.stderr)
    return 0


def copy_kit(root, target):
    """Unpack-free helper for tests and local trials: the kit as the zip lays it out, under `target`."""
    for package in KIT:
        shutil.copytree(os.path.join(root, package), os.path.join(target, package),
                        ignore=shutil.ignore_patterns("__pycache__", "*.ipynb", "*.npz"))
