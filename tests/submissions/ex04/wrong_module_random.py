"""Wrong: draws its uniforms from the module-level random, not from the rng argument."""
import random


def _draw(weights, rng):
    u = rng.random() * sum(weights)
    for j, w in enumerate(weights):
        u -= w
        if u < 0 and w > 0:
            return j
    return max(j for j, w in enumerate(weights) if w > 0)


def speculative_sample(draft_tokens, draft_probs, target_probs, rng):
    k = len(draft_tokens)
    if len(draft_probs) != k or len(target_probs) < k:
        raise ValueError("mismatched lengths")
    for i, x in enumerate(draft_tokens):
        if draft_probs[i][x] == 0:
            raise ValueError("the draft gave its own token probability 0")
    accepted = []
    for i, x in enumerate(draft_tokens):
        p, q = target_probs[i], draft_probs[i]
        if random.random() < min(1.0, p[x] / q[x]):
            accepted.append(x)
        else:
            return {"accepted_tokens": accepted, "bonus_token": _draw([max(0.0, a - b) for a, b in zip(p, q)], random), "acceptance_count": len(accepted)}
    bonus = _draw(target_probs[k], random) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
