"""Wrong: an empty draft returns early with no bonus token, even when row 0 of target_probs exists."""


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    if not draft_tokens:
        return {"accepted_tokens": [], "bonus_token": None, "acceptance_count": 0}
    if not (len(draft_probs) == len(random_samples) == len(draft_tokens) <= len(target_probs)):
        raise ValueError("inputs have mismatched lengths")
    for name, rows in (("target_probs", target_probs), ("draft_probs", draft_probs)):
        for i, row in enumerate(rows):
            if not all(0.0 <= v < float("inf") for v in row) or abs(sum(row) - 1.0) > 1e-4:
                raise ValueError(f"{name}[{i}] is not a probability distribution")
    for i, (x, row) in enumerate(zip(draft_tokens, draft_probs)):
        if not 0 <= x < len(row):
            raise ValueError(f"draft_tokens[{i}] is {x}: outside the vocabulary")
        if row[x] == 0:
            raise ValueError(f"draft_probs[{i}][{x}] is 0: the draft cannot have proposed it")
    out = []
    for step, token in enumerate(draft_tokens):
        p, q = target_probs[step], draft_probs[step]
        if random_samples[step] > min(1.0, p[token] / q[token]):
            excess = [max(0.0, a - b) for a, b in zip(p, q)]
            weights = excess if sum(excess) > 0 else p
            best = max(range(len(weights)), key=lambda j: (weights[j], -j))
            return {"accepted_tokens": out, "bonus_token": best, "acceptance_count": len(out)}
        out.append(token)
    if len(target_probs) > len(draft_tokens):
        row = target_probs[len(draft_tokens)]
        return {"accepted_tokens": out, "bonus_token": max(range(len(row)), key=lambda j: (row[j], -j)),
                "acceptance_count": len(out)}
    return {"accepted_tokens": out, "bonus_token": None, "acceptance_count": len(out)}
