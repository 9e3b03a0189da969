"""Wrong: keeps sampling after the first rejection (the first correction is kept)."""
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
    if len(draft_probs) != k or len(target_probs) < k or any(draft_probs[i][x] == 0 for i, x in enumerate(draft_tokens)):
        raise ValueError("invalid draft")
    accepted, correction = [], None
    for i, x in enumerate(draft_tokens):
        p, q = target_probs[i], draft_probs[i]
        if rng.random() < min(1.0, p[x] / q[x]):
            accepted.append(x)
        elif correction is None:
            excess = [max(0.0, a - b) for a, b in zip(p, q)]
            correction = _draw(excess if sum(excess) > 0 else p, rng)
    if correction is not None:
        return {"accepted_tokens": accepted, "bonus_token": correction, "acceptance_count": len(accepted)}
    bonus = _draw(target_probs[k], rng) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
