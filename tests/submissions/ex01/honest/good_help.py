"""An honest file that calls help() at import (Python has it; the grader's -S interpreter gave NameError)."""

"""A correct plain-Python ex01 submission, written independently of the reference: 100 (+10)."""

def _argmax(row):
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best]:  # strict: a later equal value never wins
            best = j
    return best


def _residual(p, q):
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    return [e / mass for e in excess] if mass > 0 else list(p)


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    k = len(draft_tokens)
    if len(draft_probs) != k or len(random_samples) != k or len(target_probs) < k:
        raise ValueError("lengths do not match")
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
    for i, x in enumerate(draft_tokens):
        p, q, u = target_probs[i], draft_probs[i], random_samples[i]
        if u <= min(1.0, p[x] / q[x]):
            accepted.append(x)
        else:
            bonus = _argmax(_residual(p, q))
            return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
    bonus = _argmax(target_probs[k]) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}


help(verify_speculative_tokens)
