"""Every exercise the grader knows, each imported explicitly from its own module of cases.

Adding an exercise is one new module (`exNN.py`: its public cases, kinds of
hidden case and catalogue of mistakes, ending in `EXERCISE = Exercise(...)`),
one line here, and its folder in exercises/ (see exercises/README.md).

    >>> sorted(EXERCISES)
    ['ex01', 'ex02', 'ex03', 'ex04', 'ex05', 'ex06']
    >>> exercise("ex01").max_score, exercise("ex01").bonus
    (100, 10)
"""

from . import ex01, ex02, ex03, ex04, ex05, ex06

EXERCISES = {e.name: e for e in (ex01.EXERCISE, ex02.EXERCISE, ex03.EXERCISE, ex04.EXERCISE, ex05.EXERCISE,
                                     ex06.EXERCISE)}


def exercise(name):
    """The Exercise called `name`, or ValueError listing the known ones."""
    if name not in EXERCISES:
        raise ValueError(f"unknown exercise {name!r}: expected one of {', '.join(sorted(EXERCISES))}")
    return EXERCISES[name]


def exercise_for(function_name):
    """The exercise whose functions include `function_name`, or None."""
    return next((e for e in EXERCISES.values() if function_name in e.functions), None)
