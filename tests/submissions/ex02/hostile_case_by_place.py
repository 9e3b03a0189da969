"""Hostile: solves nothing; raises ValueError only at the places of the bad-input cases in the case list.

The grader's case list is public (7 examples, then one hidden case per kind, in a fixed order) and the
last seven kinds of ex02 want a ValueError. This file learns which case it is answering without looking
at its inputs: it reads the request from the grader's worker (which shares its process) and takes the
request id as the case's place, or else counts its calls. It raised there and returned None everywhere
else, so the rule "raising everywhere earns nothing" never saw it raise on valid input: 19/100 with any
--seed (red team 4). Now the cases go in a secret random order under random ids
(specdec/grading/session.py): neither the id nor the count is the place, and it earns 0 (status failed).
"""
import sys

BAD = range(16, 23)  # ex02: 7 public cases, 16 kinds, the last 7 of them bad input
_calls = [0]


def _place():
    """The id of the request the worker is answering (the case's place in the list, once), or the call count."""
    frame = sys._getframe(1)
    while frame is not None:
        request = frame.f_locals.get("request")
        if isinstance(request, dict) and "id" in request:
            return request["id"]
        frame = frame.f_back
    return _calls[0] - 1


def softmax(logits, temperature=1.0):
    _calls[0] += 1
    if _place() in BAD:
        raise ValueError("bad input (or so the case's place says)")
    return None
