"""Wrong: the residual mass in the threshold is sum max(0, p_i - q_i), without the weight."""
import random


def _sample(weights, rng):
    u = rng.random() * sum(weights)
    total = 0.0
    for j, v in enumerate(weights):
        total += v
        if v > 0 and u < total:
            return j
    return max(j for j, v in enumerate(weights) if v > 0)


def block_verify(draft_tokens, draft_probs, target_probs, rng):
    k = len(draft_tokens)
    q, p = draft_probs, target_probs
    if len(q) != k or len(p) < k:
        raise ValueError("one draft row per drafted token, and a target row for each")
    for i, x in enumerate(draft_tokens):
        if q[i][x] == 0:
            raise ValueError(f"draft_probs[{i}][{x}] is 0")
    eta = [rng.random() for _ in range(k)]
    w = [1.0]
    for i, x in enumerate(draft_tokens):
        w.append(min(1.0, w[i] * p[i][x] / q[i][x]))
    n = 0
    for i in range(k, 0, -1):  # the last pass
        if i == k:
            h = w[k]
        elif w[i] >= 1.0:
            h = 1.0
        else:
            z = sum(max(0.0, a - b) for a, b in zip(p[i], q[i]))
            h = z / (z + 1.0 - w[i])
        if eta[i - 1] < h:
            n = i
            break
    if n == k:
        bonus = _sample(p[k], rng) if len(p) > k else None
    else:
        excess = [max(0.0, w[n] * a - b) for a, b in zip(p[n], q[n])]
        bonus = _sample(excess if sum(excess) > 0 else p[n], rng)
    return {"accepted_tokens": list(draft_tokens[:n]), "bonus_token": bonus, "acceptance_count": n}
