"""Write the exercises as learners get them: statements, stubs, notebooks and a checker, never a solution.

    python -m specdec.grade release OUT/ [--exercise ex01 ...]

For each exercise (all, in course order, or those named), its README.md (the statement),
exNN_name.py (the stub) and exNN_name.ipynb (the notebook); an index; and `checker/`, a
package a learner installs with one command (`pip install ./checker`) and runs as
`python -m grader.practice exNN_name.py` (or, in the notebook, the usual check cell). The
checker is the grading engine's in-process half (cases, judges, the worker's calling code,
reports, diagnosis) with the exercises' public and practice cases as plain data
(`released.json`: inputs, expected outputs, hints, and each known mistake's signature). It holds
no reference solution, no catalogue of mistakes' code, no case generator and no hidden case of any
seed an instructor grades with: a practice case comes from PRACTICE_SEED, never from a secret.
Kinds whose judging needs the course's exact laws (the sampler exercises' statistics) stay with
the instructor's grader; the checker names them. The release refuses to finish if any file it
wrote holds a solution block. OUT must be new or empty.

    >>> [os.path.basename(f) for f in exercise_folders()][:2]
    ['ex02_softmax', 'ex01_verify']
"""

import json
import os
import shutil

from . import diagnose
from .registry import FOLDERS, PRACTICE_KEY, ROOT, case_data, exercise, practice_cases

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
# The engine's in-process half: what check() and the practice command import, nothing that spawns a sandbox.
CHECKER_MODULES = ("__init__", "cases", "checking", "diagnose", "inprocess", "judge", "notebook", "practice",
                   "protocol", "registry", "replay", "report", "verdict", "worker")
INDEX = """# Exercises

Each folder holds a statement (`README.md`), a stub to fill in (`exNN_name.py`) and the same stub as a
notebook (`exNN_name.ipynb`), in the order the course meets them. Write the function, then check yourself.

Install the checker once (in the environment you work in): `python -m pip install ./checker`. Then:

- in a terminal: `python -m grader.practice ex01_verify/ex01_verify.py` (a `.py` file or the notebook);
- in the notebook: run its check cell.

The checker runs the public cases and practice cases of each kind (a hidden case failing shows a hint,
never the answer). Your grade comes from the instructor's grader, with other hidden cases drawn from a
secret, and it also judges the sampler exercises statistically. Hand in the one file you worked in.

{rows}
"""
PYPROJECT = """[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "specdec-checker"
version = "1.0"
description = "Check your exercises on their public and practice cases (no solutions inside)."
requires-python = ">=3.10"
dependencies = []

[tool.setuptools]
packages = ["grader"]

[tool.setuptools.package-data]
grader = ["released.json"]
"""


def exercise_folders(root=ROOT, names=None):
    """The exercises/exNN_name folders to release, in course order; ValueError if one is missing."""
    chosen = [n for n in FOLDERS if names is None or n in names]
    folders = [os.path.join(root, "exercises", FOLDERS[n]) for n in chosen]
    missing = [f for f in folders if not os.path.isdir(f)]
    if missing or not folders:
        raise ValueError(f"no exercise folder {missing[0] if missing else 'at all'} under {root}: "
                         "release needs the course repository")
    return folders


def exercise_data(name):
    """One exercise's released form: its practice cases as data, its mistakes' names, causes and signatures."""
    ex = exercise(name)
    cases, left_out = practice_cases(ex)
    sigs = diagnose.signatures(ex, PRACTICE_KEY, cases)   # a key of its own: not a grading seed
    return {"name": ex.name, "title": ex.title, "functions": list(ex.functions), "bonus": ex.bonus,
            "cases": [case_data(c) for c in cases], "left_out": left_out,
            "mistakes": [{"name": m.name, "cause": m.cause} for m in ex.mistakes],
            "signatures": {m: sorted(s) for m, s in sigs.items()}}


def release(out, root=ROOT, exercises=None):
    """Write the learners' copy of the exercises (all, or those in `exercises`) into `out`; return the paths."""
    if os.path.exists(out) and os.listdir(out):
        raise ValueError(f"{out} is not empty: release into a new folder")
    written, rows, data = [], [], []
    for folder in exercise_folders(root, exercises):
        name = os.path.basename(folder)
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for file in ("README.md", f"{name}.py", f"{name}.ipynb"):
            source = os.path.join(folder, file)
            if not os.path.exists(source):
                raise ValueError(f"{source} is missing: regenerate the exercises (exercises/make_exercises.py)")
            written.append(shutil.copyfile(source, os.path.join(out, name, file)))
        title = open(os.path.join(folder, "README.md"), encoding="utf-8").readline().lstrip("# ").strip()
        rows.append(f"- [{title}]({name}/README.md)")
        data.append(exercise_data(name[:4]))
    index = os.path.join(out, "README.md")
    with open(index, "w", encoding="utf-8") as f:
        f.write(INDEX.format(rows="\n".join(rows)))
    written.append(index)
    written += _checker(os.path.join(out, "checker"), data)
    leaks = [p for p in written if any(m in open(p, encoding="utf-8").read() for m in MARKERS)]
    if leaks:
        raise ValueError(f"a solution block is in {leaks[0]}: the stubs are stale (run exercises/make_exercises.py)")
    return written


def _checker(folder, data):
    """The checker package: the engine's in-process modules, the verify judge, the cases as data."""
    package = os.path.join(folder, "grader")
    os.makedirs(package)
    here = os.path.dirname(os.path.abspath(__file__))
    written = [shutil.copyfile(os.path.join(here, m + ".py"), os.path.join(package, m + ".py"))
               for m in CHECKER_MODULES]
    written.append(shutil.copyfile(os.path.join(ROOT, "exercises", "common", "verify_dict.py"),
                                   os.path.join(package, "verify_dict.py")))
    with open(os.path.join(package, "verify_dict.py"), encoding="utf-8") as f:
        text = f.read()
    with open(os.path.join(package, "verify_dict.py"), "w", encoding="utf-8") as f:
        f.write(text.replace("from grader.judge import", "from .judge import"))
    for path, text in ((os.path.join(package, "released.json"), json.dumps({"exercises": data}, indent=1)),
                       (os.path.join(folder, "pyproject.toml"), PYPROJECT)):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    return written
