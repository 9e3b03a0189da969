"""Correct, but with NumPy: full marks, no plain-Python bonus."""

import numpy as np


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    k = len(draft_tokens)
    if len(draft_probs) != k or len(random_samples) != k or len(target_probs) < k:
        raise ValueError("lengths do not match")
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
