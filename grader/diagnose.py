"""One most likely cause per submission, read from WHICH cases failed (not a hint per case).

Each exercise keeps a catalogue of known mistakes: trusted wrong implementations
(no early stop, `<` for `<=`, argmax of p instead of the residual, ...).
A mistake's signature is the set of cases it fails, computed by running it in
this process on the very cases the submission got (so `--seed` cases too).
The hidden kinds are generated so that every signature is distinct. Then:

0. most failures (two thirds) ran out of time, or were not run because three
   did: the function does not return; an EOFError: the code calls input();
1. most failures (two thirds, and at least two) share one message about the
   result's shape or type (a missing key, a float for a token id, a tuple), or
   one that says itself what to fix (the right exception, a message that does
   not name what it should): that problem first, for it hides any mistake of the rule;
2. the failed set equals a signature: that mistake; or the union of two
   signatures: both mistakes, named; else, when most failures are the same
   exception at the same line, that (NotImplementedError everywhere: not
   written yet);
3. a signature lies inside the failed set and covers at least half of it:
   the largest one ("explains 4 of your 6 failed cases");
4. otherwise the signature closest to the failed set (Jaccard >= 1/2), or
   "no known mistake matches". Rules 3 and 4 stay silent when more cases
   failed than any known mistake fails: that is not a near miss.

    >>> diagnose({"a": None, "b": None}, {"no_stop": frozenset({"a", "b"})}, {"no_stop": "no early stop"})
    'Most likely cause: no early stop.'
"""

import collections
import re
import threading

_SIGNATURES = {}
_LOCK = threading.Lock()


def signatures(exercise, seed, cases):
    """{mistake name: frozenset of the names of the cases it fails} (cached per exercise and seed)."""
    from .cases import twins
    from .inprocess import run_case
    key = (exercise.name, seed)
    with _LOCK:
        if key not in _SIGNATURES:
            sigs = {}
            for m in exercise.mistakes:  # judged as a submission is: twins included
                outcomes = [run_case(m.functions, c, echo=False) for c in cases]
                verdicts = [c.judge(o)[0] for c, o in zip(cases, outcomes)]
                voided = twins(cases, outcomes, verdicts)
                sigs[m.name] = frozenset(c.name for i, c in enumerate(cases)
                                         if not c.is_twin and (not verdicts[i] or i in voided))
            _SIGNATURES[key] = sigs
        return _SIGNATURES[key]


def remember(exercise_name, seed, sigs):
    """Signatures computed elsewhere: a batch computes them once, in its parent, for all its grading processes."""
    with _LOCK:
        _SIGNATURES[(exercise_name, seed)] = dict(sigs)


def _plain_way(way):
    """How a case failed, without what differs from case to case: 'call 12: x' is 'x', a hint is dropped."""
    if isinstance(way, str):   # and the value it names: 'a float (2.0)' is 'a float'
        return re.sub(r" \((?:[^()]|\([^()]*\))*\)", "", re.sub(r"^call \d+: ", "", way.split(" (hint:")[0]))
    return way


SHAPE_START = ("returned a", "the dict has no key", "the dict has an unexpected key", "modified its input",
               "returned a value the grader could not read")
# A case a time limit stopped, or that was not run because earlier ones were: the function does not return.
STOPPED = ("timed out after", "stopped after waiting", "not run: 3 cases already timed out",
           "the submission's total time")
# A judge's own words that already say what to fix (a right exception, a wrong message).
SELF_EXPLAINING = ("as it should, but its message",)
NO_RETURN = ("Most likely cause: the function does not return: {n} of your failed cases ran past their time limit "
             "or were not run after the third one that did (an endless loop, or a wait for something that never "
             "comes): run one case yourself and watch it.")
NO_INPUT = ("Most likely cause: your code calls input(){where}: the grader has no keyboard, so input() gets nothing "
            "(EOFError): remove the call.")
SHAPE_IN = ("ids must be ints", "expected an int", "is not len(")


def _is_shape_message(message):
    """A judge's word on the result's shape or type (a missing key, a float for an id, a tuple for a dict),
    or a time limit: what no mistake of the rule explains, and what hides one (not 'expected ValueError, but
    it returned ...', nor a value off by more than the tolerance: the catalogue explains those)."""
    if message.startswith("returned a value that is"):
        return False
    return message.startswith(SHAPE_START) or any(part in message for part in SHAPE_IN)


def not_started(failed):
    """True when every failure is a NotImplementedError (a stub's)."""
    return bool(failed) and all(isinstance(w, tuple) and w[0] == "NotImplementedError" for w in failed.values())


def diagnose(failed, sigs, causes):
    """The diagnosis line for `failed` ({case name: how it failed}); '' when nothing failed.

    How a case failed is (exception type, line) when the submission raised, else the judge's message.
    """
    if not failed:
        return ""
    names = frozenset(failed)
    if not_started(failed):
        return "Not written yet: every failed case raised NotImplementedError. Write the function, then check again."
    stopped = [w for w in failed.values() if isinstance(w, str) and w.startswith(STOPPED)]
    if stopped and 3 * len(stopped) >= 2 * len(failed):
        return NO_RETURN.format(n=len(stopped))
    eof = [w for w in failed.values() if isinstance(w, tuple) and w[0] == "EOFError"]
    if eof:
        return NO_INPUT.format(where=f" (line {eof[0][1]})" if eof[0][1] else "")
    way, count = collections.Counter(_plain_way(w) for w in failed.values()).most_common(1)[0]
    every = "Every failed case" if count == len(failed) else f"{count} of your {len(failed)} failed cases"
    shared = count >= 2 and 3 * count >= 2 * len(failed)
    explains = isinstance(way, str) and (_is_shape_message(way) or any(p in way for p in SELF_EXPLAINING))
    if shared and explains:   # it hides any mistake of the rule, or says itself what to fix
        return f"{every}: {way}" + ("." if count == len(failed) else ": fix that first.")
    for mistake, sig in sigs.items():
        if sig == names:
            return f"Most likely cause: {causes[mistake]}."
    pairs = [(a, b) for a in sigs for b in sigs if a < b and sigs[a] and sigs[b] and sigs[a] | sigs[b] == names
             and not sigs[a] <= sigs[b] and not sigs[b] <= sigs[a]]
    if pairs:
        a, b = pairs[0]
        return f"Most likely causes, two at once: {causes[a]}; and {causes[b]}."
    if shared and isinstance(way, tuple):
        return f"{every} raised {way[0]}" + (f" at line {way[1]}" if way[1] else "") + \
            ": start there (the message is in the table)."
    largest = max((len(sig) for sig in sigs.values()), default=0)
    inside = [(len(sig), m) for m, sig in sigs.items() if sig and sig <= names and 2 * len(sig) >= len(names)]
    if inside and len(names) <= largest:
        size, mistake = max(inside, key=lambda t: t[0])
        return (f"Most likely cause: {causes[mistake]} (it explains {size} of your {len(names)} failed cases; "
                "the others have another cause).")
    close = [(len(sig & names) / len(sig | names), m) for m, sig in sigs.items() if sig]
    if close and len(names) <= largest:
        score, mistake = max(close, key=lambda t: t[0])
        if score >= 0.5:
            return f"Possible cause: {causes[mistake]} (your failed cases are close to what that mistake fails)."
    return "No known mistake matches these failures: start with the first failed case in the table."
