"""Hostile: never verifies a draft. It checks the inputs, then emits one token drawn from target_probs[0].

"Reject and sample p" makes the first emitted token exactly p-distributed, which is all the statistical
case "first token ~ p" counted, and its output always had the right shape: 55/100 on ex04 (seed 99)
without a line of the rule (red team 4). Most of its outputs are impossible for their own inputs: it
rejects drafts with p(x) >= q(x), which the rule always keeps, and emits tokens outside the residual's
support. Now every sampler output of a statistical or shape case must have probability > 0 for its
call's inputs (`stats.outputs`, with each exercise's exact `possible`): it keeps only what its outputs
get right by construction (p(x) = 0 examples, K = 0), its validation and its seeded determinism: 41/100.
"""


def _draw(row, u):
    total = 0.0
    for j, w in enumerate(row):
        total += w
        if w > 0 and u * sum(row) < total:
            return j
    return max(j for j, w in enumerate(row) if w > 0)


def speculative_sample(draft_tokens, draft_probs, target_probs, rng):
    k = len(draft_tokens)
    if len(draft_probs) != k or len(target_probs) < k or any(draft_probs[i][x] == 0 for i, x in enumerate(draft_tokens)):
        raise ValueError("inputs do not fit together")
    if not target_probs:
        return {"accepted_tokens": [], "bonus_token": None, "acceptance_count": 0}
    return {"accepted_tokens": [], "bonus_token": _draw(target_probs[0], rng.random()), "acceptance_count": 0}
