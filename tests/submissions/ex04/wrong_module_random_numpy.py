"""Wrong: draws its uniforms from NumPy's global generator (np.random.random), not from the rng argument."""
import numpy as np


def _draw(weights):
    w = np.asarray(weights, dtype=float)
    return int(np.searchsorted(np.cumsum(w), np.random.random() * w.sum(), side="right").clip(0, len(w) - 1))


def speculative_sample(draft_tokens, draft_probs, target_probs, rng):
    k = len(draft_tokens)
    if len(draft_probs) != k or len(target_probs) < k or any(draft_probs[i][x] == 0 for i, x in enumerate(draft_tokens)):
        raise ValueError("invalid draft")
    accepted = []
    for i, x in enumerate(draft_tokens):
        p, q = np.asarray(target_probs[i]), np.asarray(draft_probs[i])
        if np.random.random() < min(1.0, p[x] / q[x]):
            accepted.append(x)
        else:
            excess = np.maximum(p - q, 0.0)
            return {"accepted_tokens": accepted, "bonus_token": _draw(excess if excess.sum() > 0 else p),
                    "acceptance_count": len(accepted)}
    bonus = _draw(target_probs[k]) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
