"""Cases and exercises: what the grader runs, worth how many points, judged how.

A `Case` holds only *inputs* (plain JSON: lists, floats, ints) plus, kept in
the grading process, the reference that computes the expected value and the
judge that compares. Public cases are the examples a learner can see (shown
with input, expected and got when they fail); hidden cases show a hint only.

    >>> ex = exercise("ex01")
    >>> ex.functions, ex.max_score, ex.bonus
    (('verify_speculative_tokens',), 100, 10)
"""

import importlib
import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    name: str
    points: int
    func: str                      # which of the exercise's functions it calls
    args: tuple = ()               # positional inputs, plain JSON ({"$rng": seed} makes a random.Random)
    arg_names: tuple = ()
    hidden: bool = True
    raises: str = ""               # "ValueError": the call must raise it
    reference: object = None       # callable(*args) -> expected value, run in the grading process only
    judge: object = None           # callable(expected, got) -> (passed, message)
    hint: str = ""                 # shown when a hidden case fails; never the expected value
    driver: str = "call"           # or a statistical driver in child.DRIVERS
    params: dict = field(default_factory=dict)

    def expected(self):
        """The reference's answer (None for a case that must raise)."""
        if self.raises:
            return None
        if self.driver != "call":
            return self.reference(self.params)
        return self.reference(*self.args)

    def to_job(self, index):
        """The inputs only, as sent to the child process."""
        return {"index": index, "name": self.name, "func": self.func, "driver": self.driver,
                "args": list(self.args), "arg_names": list(self.arg_names), "params": self.params}

    def describe_input(self, limit=400):
        """`name=value, ...` for a failed public case, cut at `limit` characters."""
        if self.driver != "call":
            text = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        else:
            text = ", ".join(f"{n}={a!r}" for n, a in zip(self.arg_names, self.args))
        return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass(frozen=True)
class Exercise:
    name: str                      # "ex01"
    title: str
    functions: tuple
    cases: tuple
    bonus: int = 0                 # points for a plain-Python submission (ex01 only)

    @property
    def max_score(self):
        return sum(c.points for c in self.cases)


def random_rows(seed, vocab, count=2):
    """`count` random distributions over `vocab` tokens from one fixed seed (every entry > 0)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        weights = [rng.random() + 1e-3 for _ in range(vocab)]
        total = sum(weights)
        rows.append([w / total for w in weights])
    return rows


# Each exercise's cases live in their own module, imported on first use.
MODULES = {"ex01": "ex01", "ex02": "ex02_03", "ex03": "ex02_03", "ex04": "ex04", "ex05": "ex05"}


def exercise(name):
    """The Exercise called `name` ("ex01" ... "ex05"), or ValueError listing the known ones."""
    if name not in MODULES:
        raise ValueError(f"unknown exercise {name!r}: expected one of {', '.join(sorted(MODULES))}")
    module = importlib.import_module(f"specdec.grading.{MODULES[name]}")
    return module.EXERCISES[name]


def exercise_for(function_name):
    """The exercise whose functions include `function_name`, or None."""
    for name in sorted(MODULES):
        try:
            ex = exercise(name)
        except (ImportError, KeyError):
            continue
        if function_name in ex.functions:
            return ex
    return None
