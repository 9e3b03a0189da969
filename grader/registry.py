"""Every exercise the grader knows: the table in `exercises/__init__.py`, each loaded from its own folder.

The engine knows no exercise by itself: `exercises.COURSE` lists them (in course
order) and each folder's `grading.py` defines `EXERCISE`.

    >>> list(EXERCISES)
    ['ex02', 'ex01', 'ex03', 'ex04', 'ex05', 'ex06']
    >>> exercise("ex01").max_score, exercise("ex01").bonus
    (100, 10)
"""

import importlib

from exercises import COURSE

FOLDERS = {name: folder for name, folder, _ in COURSE}


EXERCISES = {name: importlib.import_module(f"exercises.{folder}.grading").EXERCISE for name, folder in FOLDERS.items()}


def exercise(name):
    """The Exercise called `name`, or ValueError listing the known ones."""
    if name not in FOLDERS:
        raise ValueError(f"unknown exercise {name!r}: expected one of {', '.join(sorted(FOLDERS))}")
    return EXERCISES[name]


def exercise_for(function_name):
    """The exercise whose functions include `function_name`, or None."""
    return next((e for e in EXERCISES.values() if function_name in e.functions), None)
