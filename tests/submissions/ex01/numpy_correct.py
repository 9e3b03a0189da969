"""Correct, but with NumPy: full marks, no plain-Python bonus."""

import numpy as np


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
        p, q = np.asarray(target_probs[i]), np.asarray(draft_probs[i])
        if random_samples[i] <= min(1.0, p[x] / q[x]):
            accepted.append(np.int64(x))  # NumPy ints are fine: they convert exactly to int
        else:
            excess = np.maximum(p - q, 0.0)
            residual = excess / excess.sum() if excess.sum() > 0 else p
            return {"accepted_tokens": accepted, "bonus_token": np.argmax(residual), "acceptance_count": len(accepted)}
    bonus = np.argmax(target_probs[k]) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": np.int64(len(accepted))}
