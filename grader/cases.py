"""Cases, kinds of hidden case, and exercises: what the grader runs, worth how many points.

A `Case` is plain data sent to the sandbox (its calls' arguments) plus, kept in
the parent, the judge that decides it. Public cases are fixed (the statement's
examples; a failure shows input, expected and got). Hidden cases are made by
a `Kind` from a seed: the shipped ones from seed 0, an instructor's from a
secret `--seed`, so a table of the shipped answers earns nothing there.

A kind may name the known mistakes (the `MISTAKES` of its exercise module) that
must fail it, and only those: `generate` draws candidates until the catalogue
agrees, so every mistake keeps a distinctive set of failed cases, whatever
the seed (that is what makes the diagnosis in `diagnose.py` work).

    >>> from .registry import exercise
    >>> ex = exercise("ex01")
    >>> [c.name for c in ex.cases(0)][:3]
    ['example 1: all accepted, bonus', 'example 2: both accepted, no row K', 'example 3: length mismatch']
"""

import random
import threading
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Case:
    name: str
    points: int
    func: str
    arg_names: tuple
    calls: tuple                   # ({"args": [...], "globals": seed?}, ...) plain JSON only
    judge: Callable                # judge(results) -> (passed, message); runs in the parent
    hidden: bool = True
    hint: str = ""                 # shown when a hidden case fails; never the expected value
    expected: str = ""             # shown when a public case fails
    echo_args: bool = True         # ask the worker to send the arguments back (were they modified?)
    replay: bool = False           # statistical: some calls are replayed in a fresh sandbox (replay.py)

    def request(self, request_id):
        """What the sandbox receives for this case: inputs only, never the expected value."""
        return {"id": request_id, "func": self.func, "calls": [dict(c) for c in self.calls],
                "echo_args": self.echo_args}

    def shown_input(self, limit=400):
        """The first call's arguments as a learner would type them, cut at `limit` characters."""
        args = self.calls[0]["args"] if self.calls else []
        text = ", ".join(f"{n}={python_text(a)}" for n, a in zip(self.arg_names, args))
        if len(self.calls) > 1:
            text += f"  (and {len(self.calls) - 1} more calls)"
        return text if len(text) <= limit else text[:limit - 3] + "..."


def python_text(value):
    """Plain JSON input as Python source: {"$rng": 0} -> random.Random(0), {"$tuple": [1]} -> (1,)."""
    if type(value) is dict and list(value) == ["$rng"]:
        return f"random.Random({value['$rng']})"
    if type(value) is dict and list(value) == ["$tuple"]:
        return repr(tuple(value["$tuple"]))
    return repr(value)


@dataclass(frozen=True)
class Kind:
    name: str
    points: int
    hint: str
    make: Callable                 # make(rng, kind) -> Case
    fails: frozenset = None        # the known mistakes that must fail it (exactly); None: unconstrained


@dataclass(frozen=True)
class Mistake:
    name: str                      # short id, e.g. "no_stop"
    cause: str                     # what the report says, e.g. "verification does not stop at the first rejection"
    functions: dict                # function name -> a trusted wrong implementation


@dataclass
class Exercise:
    name: str                      # "ex01"
    title: str
    functions: tuple
    public: tuple                  # fixed Cases
    kinds: tuple                   # Kinds of hidden case
    mistakes: tuple = ()           # Mistakes, for the diagnosis
    bonus: int = 0                 # points for a plain-Python submission (ex01 only)
    _cache: dict = field(default_factory=dict, repr=False)
    _lock: object = field(default_factory=threading.Lock, repr=False)

    @property
    def max_score(self):
        return sum(c.points for c in self.public) + sum(k.points for k in self.kinds)

    def cases(self, seed=0):
        """Public cases, then one hidden case per kind generated from `seed` (0: the shipped ones)."""
        with self._lock:
            if seed not in self._cache:
                self._cache[seed] = self.public + tuple(generate(self, k, seed) for k in self.kinds)
            return self._cache[seed]


def failing_mistakes(exercise, case):
    """Names of the catalogued mistakes that fail `case` (each run in this process, judged as a submission)."""
    from .inprocess import run_case
    return frozenset(m.name for m in exercise.mistakes if not case.judge(run_case(m.functions, case, echo=False))[0])


def generate(exercise, kind, seed, attempts=2000):
    """The hidden case of `kind` for `seed`: the first candidate that the right mistakes, and only they, fail."""
    rng = random.Random(f"{exercise.name}/{kind.name}/{seed}")
    for _ in range(attempts):
        case = kind.make(rng, kind)
        if kind.fails is None or failing_mistakes(exercise, case) == kind.fails:
            return case
    raise RuntimeError(f"grader bug: no case of kind {kind.name!r} for seed {seed} in {attempts} draws")
