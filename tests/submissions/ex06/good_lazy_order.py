"""Right: exercise 6 written differently from the reference (eta_K drawn first, only as many as needed).

It draws only from its rng argument, in its own order: it must score 100, statistics and replays included.
"""


def block_verify(draft_tokens, draft_probs, target_probs, rng):
    """Right, written differently: eta_K drawn first and only as many as needed, rng.choices, fsum-free."""
    k, q, p = len(draft_tokens), draft_probs, target_probs
    if len(q) != k or len(p) < k or any(q[i][x] == 0 for i, x in enumerate(draft_tokens)):
        raise ValueError("bad block")
    w = [1.0]
    for i, x in enumerate(draft_tokens):
        w.append(min(1.0, w[-1] * p[i][x] / q[i][x]))
    n = 0
    for i in range(k, 0, -1):                      # independent etas: drawing them lazily, from the end, is fine
        mass = sum(max(0.0, w[i] * a - b) for a, b in zip(p[i], q[i])) if i < k and w[i] < 1 else None
        h = w[k] if i == k else (1.0 if mass is None else mass / (mass + 1.0 - w[i]))
        if rng.random() < h:
            n = i
            break
    if n == k:
        bonus = rng.choices(range(len(p[k])), weights=p[k])[0] if len(p) > k else None
    else:
        excess = [max(0.0, w[n] * a - b) for a, b in zip(p[n], q[n])]
        bonus = rng.choices(range(len(excess)), weights=excess if sum(excess) > 0 else p[n])[0]
    return {"accepted_tokens": list(draft_tokens[:n]), "bonus_token": bonus, "acceptance_count": n}
