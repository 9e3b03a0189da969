"""Hostile: checks nothing; raises ValueError when the draft has K = 2 tokens over a two-token vocabulary.

Every bad-input case of ex04 (and ex06) was drawn at that size, and no valid case was: this file took all
three of them (11/100 on ex04, 9/100 on ex06 with the public example excluded) under any --seed without
looking at a single length (red team 4). Now a bad-input case is the shape case's twin but for its fault
(specdec/grading/samplers.py `invalid`); no size sets it apart, and this file earns 0 (status failed).
"""


def speculative_sample(draft_tokens, draft_probs, target_probs, rng):
    rows = draft_probs or target_probs
    if len(draft_tokens) == 2 and rows and len(rows[0]) == 2:
        raise ValueError("bad input (or so its size says)")
    return None
