"""Wrong: never checks that the draft gave its drafted token probability > 0, so q(x) = 0 raises
ZeroDivisionError (p(x) / q(x)) instead of the ValueError the course decides."""


def _argmax(row):
    return min(range(len(row)), key=lambda j: (-row[j], j))


def _is_distribution(row):
    return all(0.0 <= v < float("inf") for v in row) and abs(sum(row) - 1.0) <= 1e-4


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    k = len(draft_tokens)
    if len(draft_probs) != k or len(random_samples) != k or len(target_probs) < k:
        raise ValueError("lengths do not match")
    for i, row in enumerate(target_probs):
        if not _is_distribution(row):
            raise ValueError(f"target_probs[{i}] is not a distribution")
    for i, row in enumerate(draft_probs):
        if not _is_distribution(row):
            raise ValueError(f"draft_probs[{i}] is not a distribution")
    accepted = []
    for i, x in enumerate(draft_tokens):
        p, q = target_probs[i], draft_probs[i]
        if not 0 <= x < len(q):
            raise ValueError(f"draft_tokens[{i}] is {x}: outside the vocabulary")
        if random_samples[i] <= min(1.0, p[x] / q[x]):
            accepted.append(x)
            continue
        excess = [max(0.0, a - b) for a, b in zip(p, q)]
        return {"accepted_tokens": accepted, "bonus_token": _argmax(excess if sum(excess) > 0 else p),
                "acceptance_count": len(accepted)}
    bonus = _argmax(target_probs[k]) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
