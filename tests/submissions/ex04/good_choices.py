"""Right: exercise 4 written differently from the reference (rng.choices, u compared after the draw).

It draws only from its rng argument, in its own order: it must score 100, statistics and replays included.
"""


def speculative_sample(draft_tokens, draft_probs, target_probs, rng):
    """Right, written differently from the reference: u * q(x) < p(x), rng.choices for the draws."""
    k = len(draft_tokens)
    if len(draft_probs) != k or len(target_probs) < k or any(draft_probs[i][x] == 0 for i, x in enumerate(draft_tokens)):
        raise ValueError("bad draft")
    accepted = []
    for i, x in enumerate(draft_tokens):
        p, q = target_probs[i], draft_probs[i]
        if rng.random() * q[x] < p[x]:
            accepted.append(x)
            continue
        residual = [max(0.0, a - b) for a, b in zip(p, q)]
        token = rng.choices(range(len(p)), weights=residual if sum(residual) > 0 else p)[0]
        return {"accepted_tokens": accepted, "bonus_token": token, "acceptance_count": len(accepted)}
    bonus = rng.choices(range(len(target_probs[k])), weights=target_probs[k])[0] if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
