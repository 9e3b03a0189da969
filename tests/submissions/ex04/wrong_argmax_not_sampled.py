"""Wrong: the replacement and the bonus are argmaxes (exercise 1's rule), not draws."""
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
        if rng.random() < min(1.0, p[x] / q[x]):
            accepted.append(x)
        else:
            return {"accepted_tokens": accepted, "bonus_token": _argmax([max(0.0, a - b) for a, b in zip(p, q)]), "acceptance_count": len(accepted)}
    bonus = _argmax(target_probs[k]) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}


def _argmax(row):
    return max(range(len(row)), key=lambda j: (row[j], -j))
