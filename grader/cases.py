"""Cases, kinds of hidden case, and exercises: what the grader runs, worth how many points.

A `Case` is plain data sent to the sandbox (its calls' arguments) plus, kept in
the parent, the judge that decides it. Public cases are fixed (the statement's
examples; a failure shows input, expected and got). Hidden cases are made by
a `Kind` from a seed: the shipped ones from seed 0, an instructor's from a
secret `--seed`, so a table of the shipped answers earns nothing there. Every
file of a class is graded on the same cases (the exercise's and the seed's):
the same function gets the same score, whoever handed it in.

Twins keep points for rules, not for tables or reflexes. A public example's twin is
the same example with its token ids renamed and its values moved, asking what the example
asks (drawn from the seed, so no table of the shipped files holds it, and no renaming can be
undone by matching columns): the example's points count only if its twin passes. A bad-input
case's twin is the same input without its fault: a case passed by raising counts only if
the file answers its twin without raising (raising on every input is no validation, and
one over-strict check on valid rows costs only the cases it breaks). Twins are hidden,
worth 0, run in the same secret order as every case, and shown only through the message of
the case they decide; an exercise makes them with its `rename` and `repair` (`Exercise.cases`).

A kind may name the known mistakes (the `MISTAKES` of its exercise module) that
must fail it, and only those: `generate` draws candidates until the catalogue
agrees, so every mistake keeps a distinctive set of failed cases, whatever
the seed (that is what makes the diagnosis in `diagnose.py` work).

    >>> from .registry import exercise
    >>> ex = exercise("ex01")
    >>> [c.name for c in ex.cases(0)][:3]
    ['example 1: all accepted, bonus', 'example 1: all accepted, bonus (renamed)', 'example 2: both accepted, no row K']
    >>> [c.name for c in ex.cases(0) if c.is_twin][-1]
    'a negative entry raises (its valid twin)'
"""

import hashlib
import random
import threading
from dataclasses import dataclass, field, replace
from typing import Callable

from .judge import returns_judge


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
    twin: str = ""                 # the name of this case's twin (below), "" if it has none
    is_twin: bool = False          # a twin: worth nothing itself, it decides whether its case's points count

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
    stub: str = ""                 # the released stub's code (set by the registry; similar.py sets it aside)
    rename: Callable = None        # rename(rng, case) -> the public example with its ids renamed (its twin)
    repair: Callable = None        # repair(args) -> the arguments of a bad-input case without the fault
    _cache: dict = field(default_factory=dict, repr=False)
    _lock: object = field(default_factory=threading.Lock, repr=False)

    @property
    def max_score(self):
        return sum(c.points for c in self.public) + sum(k.points for k in self.kinds)

    def cases(self, seed=0):
        """Public cases, then one hidden case per kind generated from `seed` (0: the shipped ones), each
        followed by its twin if it has one (see `twins`)."""
        with self._lock:
            if seed not in self._cache:
                drawn = []
                for case in self.public:
                    drawn += self._with_twin(case, random.Random(f"{self.name}/twin/{case.name}/{seed}"))
                for kind in self.kinds:
                    drawn += self._with_twin(generate(self, kind, seed), None)
                self._cache[seed] = tuple(drawn)
            return self._cache[seed]

    def _with_twin(self, case, rng):
        """[case] or [case with its twin's name, its twin]: a bad-input case's repaired input, a public
        example renamed (with `rng`, drawn from the seed)."""
        made = None
        if getattr(case.judge, "spec", {}).get("judge") == "raises" and self.repair and len(case.calls) == 1:
            renamed = self.rename(rng, case) if rng is not None and self.rename else None   # a public one: drawn too
            args = self.repair((renamed or case).calls[0]["args"])
            if args is not None:
                made = twin(case, f"{case.name} (its valid twin)", args, lambda calls: returns_judge())
        elif rng is not None and self.rename:
            made = self.rename(rng, case)
            made = made and replace(made, name=f"{case.name} (renamed)", points=0, hidden=True, is_twin=True)
        return [replace(case, twin=made.name), made] if made else [case]


def grading_key(exercise, secret):
    """What a grading's order of cases, request ids and replayed calls are drawn from (`session.order_rng`): the
    exercise and the instructor's secret, nothing of the file. So the same file gets the same score on every
    run, and two files with the same function get the same score, whatever their names or layout (issue 25:
    hidden cases drawn per file gave two files with one uncatalogued mistake 68 and 65). Under the shipped
    cases (secret 0) the key is as public as the cases are.

    >>> grading_key("ex01", 7) == grading_key("ex01", 7) != grading_key("ex01", 8)
    True
    """
    return hashlib.sha256(f"specdec-grading\x00{exercise}\x00{int(secret)}".encode()).hexdigest()


def twin(case, name, args, judge, hint=""):
    """The twin of `case` (see the module docstring): one call with `args`, judged by `judge(calls)`."""
    calls = ({"args": list(args)},)
    return Case(name, 0, case.func, case.arg_names, calls, judge(calls), True, hint, "", case.echo_args,
                is_twin=True)


def twins(cases, outcomes, verdicts):
    """{case index: message} for the passed cases whose twin says the pass is no rule's (`cases` docstring).

    A case passed by raising counts only if its twin (the same input without the fault) was answered
    without raising; any other case with a twin (a public example) counts only if the twin passed.
    """
    at = {c.name: i for i, c in enumerate(cases)}
    out = {}
    for i, (case, outcome, passed) in enumerate(zip(cases, outcomes, verdicts)):
        j = at.get(case.twin) if passed and case.twin else None
        if j is None:
            continue
        if _raised(outcome):
            raised = _raised(outcomes[j])
            if raised or "failure" in outcomes[j]:
                name = raised[0][0] if raised and raised[0] else "an error"
                out[i] = (f"raised {name} as it should, but it also raises {name} on the same input without its "
                          "fault: an error on valid input earns no validation points")
        elif not verdicts[j]:
            out[i] = ("passes this example but not the same example with its token ids renamed and its values moved "
                      "(a hidden case): points go to a rule, not to a table of the examples' answers")
    return out


def _raised(outcome):
    """The builtin exception classes each call of `outcome` raised (a list of lists of names)."""
    return [r["raised"]["builtin_types"] for r in (outcome or {}).get("results", []) if "raised" in r]


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
