"""From the outcomes of one run to a Report: judge every case, explain failures, diagnose.

Shared by the command-line grader (sandboxed outcomes) and `check()` (outcomes
from this process). A failed public case shows its input, expected value and
what came back; a failed hidden case shows its hint, never the expected value.
A judge that crashes is the grader's bug, and the case says so plainly.

    >>> from .registry import exercise
    >>> ex = exercise("ex03")
    >>> cases = ex.cases(0)
    >>> outcomes = [{"results": [{"raised": {"type": "NotImplementedError", "message": "write it",
    ...                                      "builtin_types": ["NotImplementedError"], "line": 9, "text": "raise"}}]}
    ...             for _ in cases]
    >>> report = build(ex, 0, cases, outcomes)
    >>> report.score, report.diagnosis[:15]
    (0, 'Not written yet')
"""

import builtins
import re
import traceback

from .cases import twins
from .diagnose import diagnose, not_started, signatures
from .protocol import Foreign
from .report import CaseResult, Report


BUILTIN_ERRORS = frozenset(n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException))


def checked_lines(outcome, lines):
    """Each exception the outcome reports, placed on the submission's own lines (in place): a `line` outside
    the file is dropped, and `text` is always the file's own line, never what the sandbox said it was (a file
    can write its own reports: only its code's lines are what it may show)."""
    for result in (outcome or {}).get("results", []):
        for key in ("raised", "unconvertible"):
            info = result.get(key)
            if not info or "line" not in info:
                continue
            if lines is None or not 0 < info["line"] <= len(lines):
                info.pop("line", None)
                info.pop("text", None)
            else:
                info["text"] = lines[info["line"] - 1].strip()[:200]


# What a judge's or the session's words may hold of the submission's own choosing, and what a hidden case shows
# instead: a value's repr ("a float (0.125)"), a class's name, an int's size, a worker's exit code, a reply's
# size, which call of a batch failed, how many results came back.
REDACTED = ((r"\b(an? (?:float|int|str|list|dict|bool|tuple)) \((?:[^()]|\([^()]*\))*\)", r"\1"),
            (r"an object of type \S+", "an object"), (r"an int with (?:more than )?\d+ digits", "a huge int"),
            (r" \(code [^)]*\)", ""), (r"a reply of \d+ bytes", "a reply too large"),
            (r"^call \d+ of (\d+): ", r"one of its \1 calls: "), (r"only \d+ results", "fewer results"))


def _raised_name(info):
    return info["type"] if info["type"] in BUILTIN_ERRORS else "an exception of its own class"


def redact(message, outcome):
    """What a failed hidden case may say: nothing the submission chose, only how it failed.

    A submission sees the hidden inputs, so whatever text of its own reaches the learner could carry them out
    to a classmate's answer sheet (issue 25): an exception's message, the name of a class it made up, a value
    it returned. What is left: the builtin exception's name and the submission's own line of code, or the
    judge's words with every value set aside ("returned a float, expected a dict").

    >>> redact("returned a str ('leak 0.125'), expected a dict", {"results": [{"value": "leak 0.125"}]})
    'returned a str, expected a dict'
    >>> redact("modified its input draft_probs (inputs must be left unchanged)", {"results": [{"value": 1}]})
    'modified its input draft_probs (inputs must be left unchanged)'
    """
    results = (outcome or {}).get("results", []) if isinstance((outcome or {}).get("results"), list) else []
    result = next((r for r in results if "raised" in r or "unconvertible" in r), {})
    info = result.get("raised") or result.get("unconvertible")
    if info is not None:
        many = re.match(r"^call \d+ of (\d+): ", message)
        if many:   # which call of a batch raised is the submission's choice too
            return f"one of its {many.group(1)} calls: " + redact(message[many.end():], {"results": [result]})
        where = info.get("where") or (f"line {info['line']}" if "line" in info else "")
        head = {"SystemExit": "called sys.exit()"}.get(info["type"], f"raised {_raised_name(info)}")
        if "unconvertible" in result:
            head = f"returned a value the grader could not read ({head})"
        elif message.startswith("expected "):
            head = message.split(", but it ", 1)[0] + ", but it " + head
        elif "as it should, but its message" in message:
            head = message
        return head + (f" ({where}: `{info.get('text', '')}`)" if where else "")
    for pattern, shown in REDACTED:
        message = re.sub(pattern, shown, message)
    return message[:300]


def judge_case(case, outcome):
    """(passed, message, detail lines, crash key) for one case; never raises."""
    try:
        passed, message = case.judge(outcome)
    except Exception:
        where = traceback.format_exc().strip().splitlines()[-1]
        return False, f"GRADER BUG while judging this case (not your mistake; please report it): {where}", [], "bug"
    if passed:
        return True, "", [], None
    result = outcome.get("results", [{}])[0] if "results" in outcome else {}
    # How it failed, for the diagnosis: the exception and its line, unless the judge's words already say more (a
    # right exception with a wrong message).
    raised = "raised" in result and "as it should, but" not in message
    crash = (result["raised"]["type"], result["raised"].get("line")) if raised else message
    if case.hidden:
        if raised:
            crash = (_raised_name(result["raised"]), result["raised"].get("line"))
        return False, redact(message, outcome) + (f" (hint: {case.hint})" if case.hint else ""), [], crash
    value = result.get("value")
    got = (str(value) if isinstance(value, Foreign) else repr(value)) if "value" in result else message
    detail = [f"input:    {case.shown_input()}", f"expected: {case.expected[:400]}", f"got:      {got[:400]}"]
    return False, message, detail, crash


def build(exercise, seed, cases, outcomes, key=None, **fields):
    """A Report for `outcomes` (one per case, in order); `fields` fill in the rest (source, bonus ...).

    `key`: what the diagnosis caches these cases' signatures under, when they are not `seed`'s own.
    """
    results, failed, bug = [], {}, False
    judged = [judge_case(case, outcome) for case, outcome in zip(cases, outcomes)]
    voided = twins(cases, outcomes, [j[0] for j in judged])
    for i, (case, (passed, message, detail, crash)) in enumerate(zip(cases, judged)):
        if i in voided:
            passed, message, crash = False, voided[i], "twin"
        bug = bug or crash == "bug"
        if case.is_twin:   # decides its case's points (above); not a row of its own
            continue
        results.append(CaseResult(case.name, case.hidden, case.points, passed, message, detail, crash))
        if not passed:
            failed[case.name] = crash
    report = Report(exercise.name, exercise.title, results, exercise.max_score, exercise.bonus, seed=seed,
                    grader_bug=bug, **fields)
    if failed and not report.error and not bug:  # a grader bug makes any diagnosis a guess
        sigs = {} if not_started(failed) and len(failed) == len(cases) else \
            signatures(exercise, seed if key is None else key, cases)
        report.diagnosis = diagnose(failed, sigs, {m.name: m.cause for m in exercise.mistakes})
    return report


def not_run(exercise, seed, cases, error, **fields):
    """The Report of a submission that could not be graded at all (every case fails, status error)."""
    results = [CaseResult(c.name, c.hidden, c.points, False, "not run: the submission could not be graded")
               for c in cases if not c.is_twin]
    return Report(exercise.name, exercise.title, results, exercise.max_score, exercise.bonus, seed=seed,
                  error=error, **fields)
