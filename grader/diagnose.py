"""One most likely cause per submission, read from WHICH cases failed (not a hint per case).

Each exercise keeps a catalogue of known mistakes: trusted wrong implementations
(no early stop, `<` for `<=`, argmax of p instead of the residual, ...).
A mistake's signature is the set of cases it fails, computed by running it in
this process on the very cases the submission got (so `--seed` cases too).
The hidden kinds are generated so that every signature is distinct. Then:

1. the failed set equals a signature: that mistake;
2. every failure is the same exception at the same line, or the same message:
   that one problem (NotImplementedError everywhere: not written yet);
3. a signature lies inside the failed set and covers at least half of it:
   the largest one ("explains 4 of your 6 failed cases");
4. otherwise the signature closest to the failed set (Jaccard >= 1/2), or
   "no known mistake matches". Rules 3 and 4 stay silent when more cases
   failed than any known mistake fails: that is not a near miss.

    >>> diagnose({"a": None, "b": None}, {"no_stop": frozenset({"a", "b"})}, {"no_stop": "no early stop"})
    'Most likely cause: no early stop.'
"""

import threading

_SIGNATURES = {}
_LOCK = threading.Lock()


def signatures(exercise, seed, cases):
    """{mistake name: frozenset of the names of the cases it fails} (cached per exercise and seed)."""
    from .cases import failing_mistakes
    key = (exercise.name, seed)
    with _LOCK:
        if key not in _SIGNATURES:
            failed = {m.name: set() for m in exercise.mistakes}
            for case in cases:
                for name in failing_mistakes(exercise, case):
                    failed[name].add(case.name)
            _SIGNATURES[key] = {name: frozenset(s) for name, s in failed.items()}
        return _SIGNATURES[key]


def remember(exercise_name, seed, sigs):
    """Signatures computed elsewhere: a batch computes them once, in its parent, for all its grading processes."""
    with _LOCK:
        _SIGNATURES[(exercise_name, seed)] = dict(sigs)


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
    for mistake, sig in sigs.items():
        if sig == names:
            return f"Most likely cause: {causes[mistake]}."
    if not_started(failed):
        return "Not written yet: every failed case raised NotImplementedError. Write the function, then check again."
    ways = set(failed.values())
    if len(ways) == 1 and len(names) > 1:
        way = next(iter(ways))
        if isinstance(way, tuple):
            return f"Every failed case raised {way[0]}" + (f" at line {way[1]}" if way[1] else "") + \
                ": start there (the message is in the table)."
        return f"Every failed case: {way}."
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
