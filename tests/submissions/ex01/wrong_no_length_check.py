"""Wrong: never checks the lengths; zip() silently drops what does not match."""


def _argmax(row):
    best = 0
    for j, v in enumerate(row):
        if v > row[best]:
            best = j
    return best


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    for name, rows in (("target_probs", target_probs), ("draft_probs", draft_probs)):
        for i, row in enumerate(rows):
            if not all(0.0 <= v < float("inf") for v in row) or abs(sum(row) - 1.0) > 1e-4:
                raise ValueError(f"{name}[{i}] is not a probability distribution")
    for i, (x, row) in enumerate(zip(draft_tokens, draft_probs)):
        if not 0 <= x < len(row):
            raise ValueError(f"draft_tokens[{i}] is {x}: outside the vocabulary")
        if row[x] == 0:
            raise ValueError(f"draft_probs[{i}][{x}] is 0: the draft cannot have proposed it")
    accepted = []
    for x, q, p, u in zip(draft_tokens, draft_probs, target_probs, random_samples):
        if u <= min(1.0, p[x] / q[x]):
            accepted.append(x)
            continue
        excess = [max(0.0, a - b) for a, b in zip(p, q)]
        total = sum(excess)
        return {"accepted_tokens": accepted, "acceptance_count": len(accepted),
                "bonus_token": _argmax([e / total for e in excess] if total > 0 else p)}
    k = len(draft_tokens)
    bonus = _argmax(target_probs[k]) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
