"""Every exercise the grader knows: the table in `exercises/__init__.py`, each loaded from its own folder.

The engine knows no exercise by itself: `exercises.COURSE` lists them (in course
order) and each folder's `grading.py` defines `EXERCISE`.

In a learner's handout (`release.py`) there is no `exercises` package and no reference
of any exercise: there the exercises come from `released.json` beside this file, their
public and practice cases as plain data, each judge rebuilt from its `spec`
(`judge.with_spec`), each mistake's signature precomputed (`diagnose.remember`).

    >>> list(EXERCISES)
    ['ex02', 'ex01', 'ex03', 'ex04', 'ex05', 'ex06']

An exercise's grading is imported when it is first asked for (`exercise`), not before: a Gradescope
autograder ships one exercise's folder and no other (`gradescope.build`).
    >>> exercise("ex01").max_score, exercise("ex01").bonus
    (100, 10)
"""

import collections.abc
import importlib
import importlib.util
import json
import os
import sys

from . import diagnose, judge
from .cases import Case, Exercise, Mistake

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RELEASED = os.path.join(HERE, "released.json")
PRACTICE_SEED = 1   # the practice cases a handout's checker holds (never 0, the shipped hidden set)
PRACTICE_KEY = ("practice", PRACTICE_SEED)   # what their signatures are cached under (diagnose.signatures)


def _judge(spec):
    """A judge rebuilt from its spec (plain data)."""
    kind, data = spec["judge"], {k: v for k, v in spec.items() if k != "judge"}
    if kind == "raises":
        return judge.raises_judge(data["exception"], data.get("names"))
    if kind == "returns":
        return judge.returns_judge()
    if kind == "verify":
        from .verify_dict import verify_judge   # in a handout, the verify exercises' judge sits beside this file
        return lambda calls: verify_judge(data["expected"], calls, tuple(data["names"]))
    builder = {"floats": judge.floats_judge, "float": judge.float_judge}[kind]
    return lambda calls: builder(data["expected"], calls, tuple(data["names"]), data["tol"])


def case_from_data(data):
    """A Case from its released form (`case_data`)."""
    calls = tuple(data["calls"])
    rebuild = _judge(data["judge"])
    checker = rebuild if data["judge"]["judge"] in ("raises", "returns") else rebuild(calls)
    return Case(data["name"], data["points"], data["func"], tuple(data["arg_names"]), calls, checker,
                data["hidden"], data["hint"], data["expected"], data["echo_args"], False, data["twin"],
                data["is_twin"])


def case_data(case):
    """The released form of a case whose judge has a spec, or None (a law, a replayed batch: grader only)."""
    spec = getattr(case.judge, "spec", None)
    if spec is None or case.replay:
        return None
    return {"name": case.name, "points": case.points, "func": case.func, "arg_names": list(case.arg_names),
            "calls": [dict(c) for c in case.calls], "hidden": case.hidden, "hint": case.hint,
            "expected": case.expected, "echo_args": case.echo_args, "judge": spec, "twin": case.twin,
            "is_twin": case.is_twin}


def practice_cases(ex):
    """The cases a learner may check with: the public ones, then one of each hidden kind (at PRACTICE_SEED)
    whose judge is plain data, with their twins; (cases, names of the kinds left to the instructor's grader)."""
    drawn = ex.cases(PRACTICE_SEED)
    kept = tuple(c for c in drawn if case_data(c) is not None)
    return kept, [k.name for k in ex.kinds if k.name not in {c.name for c in kept}]


def _course_package():
    """The `exercises` package beside this engine, whatever folder the command runs from (a folder called
    exercises in the current directory would otherwise shadow it)."""
    folder = os.path.join(ROOT, "exercises")
    module = sys.modules.get("exercises")
    if module is None or os.path.dirname(os.path.abspath(getattr(module, "__file__", "") or "")) != folder:
        spec = importlib.util.spec_from_file_location("exercises", os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])
        module = importlib.util.module_from_spec(spec)
        sys.modules["exercises"] = module
        spec.loader.exec_module(module)
    return module


def _released():
    with open(RELEASED, encoding="utf-8") as f:
        data = json.load(f)
    out = {}
    for e in data["exercises"]:
        cases = tuple(case_from_data(c) for c in e["cases"])
        mistakes = tuple(Mistake(m["name"], m["cause"], {}) for m in e["mistakes"])
        ex = Exercise(e["name"], e["title"], tuple(e["functions"]), cases, (), mistakes, e["bonus"])
        sigs = {m: frozenset(names) for m, names in e["signatures"].items()}
        for key in (0, PRACTICE_KEY):   # the notebook's check cell (seed 0) and the practice command
            diagnose.remember(ex.name, key, sigs)
        ex.left_out = e["left_out"]
        out[ex.name] = ex
    return out


class _Course(collections.abc.Mapping):
    """{name: Exercise} of the course repository, each folder's grading imported on first use."""

    def __init__(self, folders):
        self.folders, self.loaded = folders, {}

    def __getitem__(self, name):
        if name not in self.loaded:
            folder = self.folders[name]
            ex = importlib.import_module(f"exercises.{folder}.grading").EXERCISE
            stub = os.path.join(ROOT, "exercises", folder, folder + ".py")
            if os.path.exists(stub):  # the stub every learner starts from (similar.py sets it aside)
                with open(stub, encoding="utf-8") as f:
                    ex.stub = f.read()
            self.loaded[name] = ex
        return self.loaded[name]

    def __iter__(self):
        return iter(self.folders)

    def __len__(self):
        return len(self.folders)


if os.path.exists(RELEASED):
    EXERCISES = _released()
    FOLDERS = {name: name for name in EXERCISES}
else:
    COURSE = _course_package().COURSE
    FOLDERS = {name: folder for name, folder, _ in COURSE}
    EXERCISES = _Course(FOLDERS)


def exercise(name):
    """The Exercise called `name`, or ValueError listing the known ones."""
    if name not in FOLDERS:
        raise ValueError(f"unknown exercise {name!r}: expected one of {', '.join(sorted(FOLDERS))}")
    return EXERCISES[name]


def exercise_for(function_name):
    """The exercise whose functions include `function_name`, or None."""
    return next((e for e in EXERCISES.values() if function_name in e.functions), None)
