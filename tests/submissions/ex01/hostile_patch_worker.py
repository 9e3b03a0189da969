"""Hostile: rewrites the grader's worker (it shares the process) to answer "raised ValueError" for every call.

In the old design the comparisons ran in that process, so patching them faked a pass. Now the
parent judges: the forged answers once earned exactly the cases where raising ValueError IS right;
since the third red team, an error raised on valid inputs too earns no validation points: 0.
"""
import sys

worker = sys.modules["__main__"]


def _always_raise(functions, request, display, in_process=False):
    info = {"type": "ValueError", "message": "forged", "builtin_types": ["ValueError", "Exception"]}
    return {"id": request["id"], "results": [{"raised": info} for _ in request["calls"]]}


worker.run_request = _always_raise
worker.to_plain = lambda value, depth=0: {"accepted_tokens": [], "bonus_token": 0, "acceptance_count": 0}


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    return None
