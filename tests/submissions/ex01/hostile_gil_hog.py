"""Hostile: every reply carries 8 MiB of empty lists, just under the reply limit.

Parsing that takes the grading process more than a second, holding its interpreter lock; when all
files were judged in one process, the files graded beside this one missed their time limits (one
honest file scored 0). Each file now has a grading process of its own: this one fails its own
cases, and every other file keeps exactly its grade.
"""
import sys

worker = sys.modules["__main__"]
_frame = worker.frame
EMPTY_LISTS = b"[" + b"[]," * (8 * 1024 ** 2 // 3 - 1000) + b"[]]"


def frame(message):
    if "results" in message:
        body = b'{"id": %d, "results": [{"value": %s}]}' % (message["id"], EMPTY_LISTS)
        return str(len(body)).encode() + b"\n" + body
    return _frame(message)


worker.frame = frame


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    return None
