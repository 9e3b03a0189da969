"""Judge a run's messages and present the result: a table, a score line, or JSON.

Scoring rules (stated once, applied everywhere):
- a case earns its points only if it passes; no partial credit inside a case;
- a case fails if the function changed its inputs ("mutated draft_probs"),
  even when its answer is right;
- the plain-Python bonus (ex01: +10) needs NumPy never imported while the
  submission loads and runs AND a score above 0 (a stub earns no bonus);
- the last line of the table is always `score: S/MAX` plus ` (+B bonus)` if B > 0.

    >>> CaseResult("seed 1", False, 10, True, "").earned
    10
"""

import json
from dataclasses import dataclass, field

from .judge import describe


@dataclass
class CaseResult:
    name: str
    hidden: bool
    points: int
    passed: bool
    message: str
    detail: list = field(default_factory=list)   # extra lines for a failed public case

    @property
    def earned(self):
        return self.points if self.passed else 0


@dataclass
class Report:
    exercise: str
    title: str
    cases: list
    max_score: int
    plain_python: object = None    # True / False, or None when unknown (in-process check)
    bonus_points: int = 0          # what the exercise offers
    error: str = ""                # non-empty: the submission could not be graded
    source: str = ""

    @property
    def score(self):
        return sum(c.earned for c in self.cases)

    @property
    def bonus(self):
        return self.bonus_points if self.bonus_points and self.plain_python is True and self.score > 0 else 0

    @property
    def status(self):
        if self.error:
            return "error"
        return "passed" if all(c.passed for c in self.cases) else "failed"

    @property
    def exit_code(self):
        return {"passed": 0, "failed": 1, "error": 2}[self.status]

    def score_line(self):
        return f"score: {self.score}/{self.max_score}" + (f" (+{self.bonus} bonus)" if self.bonus else "")

    def table(self):
        """The human-readable report; its last line is `score_line()`."""
        lines = [f"{self.exercise} {self.title}" + (f": {self.source}" if self.source else "")]
        if self.error:
            lines += [f"cannot grade: {self.error}", self.score_line()]
            return "\n".join(lines)
        width = max([len(c.name) for c in self.cases] + [4])
        lines.append(f"  {'case':<{width}}  {'points':>6}  result  message")
        for c in self.cases:
            name = c.name + (" *" if c.hidden else "")
            result = "pass" if c.passed else "FAIL"
            lines.append(f"  {name:<{width + 2}}{c.earned:>3}/{c.points:<3} {result:<6}  {c.message}".rstrip())
            lines += [f"      {d}" for d in c.detail]
        lines.append(f"  (* hidden case: a failure shows a hint, not the expected value)")
        if self.bonus_points:
            if self.plain_python is None:
                lines.append(f"plain-Python bonus (+{self.bonus_points}): decided by `python -m specdec.grade`, "
                             "which runs the file in a fresh process")
            elif self.plain_python:
                lines.append("plain Python: NumPy was never imported" +
                             (f" -> +{self.bonus} bonus" if self.bonus else " (bonus needs a score above 0)"))
            else:
                lines.append("NumPy was imported: no plain-Python bonus")
        lines.append(self.score_line())
        return "\n".join(lines)

    def to_json(self):
        return json.dumps({"exercise": self.exercise, "score": self.score, "max_score": self.max_score,
                           "bonus": self.bonus, "plain_python": self.plain_python, "status": self.status,
                           "error": self.error,
                           "cases": [{"name": c.name, "hidden": c.hidden, "points": c.points,
                                      "passed": c.passed, "message": c.message} for c in self.cases]})

    def __repr__(self):  # what a notebook shows under check(): one stable line, the table was printed
        return f"<Report {self.exercise}: {self.score_line()}>"


def judge_case(case, message):
    """(passed, message, detail lines) for one case given the child's message."""
    outcome = message.get("outcome") if isinstance(message, dict) else None
    if outcome not in ("returned", "raised"):
        text = message.get("message") if isinstance(message, dict) else None
        if outcome == "too_large":
            text = f"the result was too large to grade ({message.get('size')} bytes)"
        return False, text or "no result", []
    if message.get("mutated"):
        return False, "mutated " + ", ".join(message["mutated"]), []
    if outcome == "raised":
        raised = f"raised {message.get('type')}: {message.get('message', '')}".rstrip(": ")
        if message.get("type") == "SystemExit":
            raised = f"called sys.exit({message.get('message', '')})"
        if case.raises and case.raises in message.get("builtin_types", []):
            return True, "", []
        got = raised
        passed, text = False, raised if not case.raises else f"expected {case.raises}, {raised}"
    elif case.raises:
        got = describe(message.get("value"))
        passed, text = False, f"expected {case.raises}, but it returned {got}"
    else:
        got = message.get("value")
        passed, text = case.judge(case.expected(), got)
        got = repr(got)
    if passed:
        return True, "", []
    if case.hidden:
        return False, text + (f" (hint: {case.hint})" if case.hint else ""), []
    expected = f"raises {case.raises}" if case.raises else repr(case.expected())
    return False, text, [f"input:    {case.describe_input()}", f"expected: {expected[:400]}", f"got:      {got[:400]}"]


def build_report(exercise, messages, plain_python=None, error="", source=""):
    """Judge every case's message; `error` marks a submission that could not be graded."""
    results = []
    for case, message in zip(exercise.cases, messages):
        if error:
            passed, text, detail = False, "not run: the submission could not be graded", []
        else:
            passed, text, detail = judge_case(case, message)
        results.append(CaseResult(case.name, case.hidden, case.points, passed, text, detail))
    return Report(exercise.name, exercise.title, results, exercise.max_score, plain_python,
                  exercise.bonus, error, source)
