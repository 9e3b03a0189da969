"""Hostile: reports every call as an exception whose type is a list nested 900 deep, not a string.

The grader once turned such a report into text with str(), which recursed past Python's limit and
crashed the grading process whenever it ran a few dozen frames deep (under pytest, in Jupyter).
Texts must now be JSON strings: each case fails with a clear message, and nothing crashes.
"""
import sys

worker = sys.modules["__main__"]
_frame = worker.frame
DEEP = "[" * 900 + "]" * 900


def frame(message):
    if "results" in message:
        body = ('{"id": %d, "results": [{"raised": {"type": %s, "message": "m", "builtin_types": []}}]}'
                % (message["id"], DEEP)).encode()
        return str(len(body)).encode() + b"\n" + body
    return _frame(message)


worker.frame = frame


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    raise ValueError("the report of this is forged anyway")
