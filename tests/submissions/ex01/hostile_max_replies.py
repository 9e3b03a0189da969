"""Hostile: every reply as large as the protocol allows (a 7 MB string, under the 8 MiB frame), to hold the
grader's time and memory (the red team's held a grading slot for 185 s and 710 MB of the grading process).

Deserved verdict: 0, and cheaply: the replies of one run may take session.MAX_RUN_BYTES (24 MiB) in all, so
after three such replies the rest of the cases are not run; the grading process stays small.
"""

BIG = "x" * 7_000_000


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    return {"accepted_tokens": BIG, "bonus_token": None, "acceptance_count": 0}
