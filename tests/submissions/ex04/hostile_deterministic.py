"""Hostile: never samples. The worker is patched to see each batch whole and hand out outputs in exact quotas.

For a batch of N calls the first emitted token, the number of accepted drafts and the bonus token
are assigned so that their counts equal their exact expectations (N p, ...), which no sampler
achieves; a single call (or a pair) gets a deterministic answer, the same for the same inputs.
It scored 100/100 when ex04 judged counts alone: any fixed statistic of a batch can be matched by a
file that sees the batch. Now half of each statistical case's calls are replayed in a fresh sandbox,
shuffled among other cases' calls (specdec/grading/replay.py): its answers there are not the ones it
gave (72-100% of them differ), so it fails every statistical case and keeps only its exact cases
(tests/test_grading_redteam.py).
"""
import sys

worker = sys.modules["__main__"]
_run = worker.run_request


def _residual(p, q):
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    return [e / mass for e in excess] if mass > 0 else list(p)


def _quota(weights, n):
    """n labels, label j repeated round(n * w_j) times (largest remainders)."""
    raw = [w * n for w in weights]
    counts = [int(r) for r in raw]
    for j in sorted(range(len(raw)), key=lambda j: raw[j] - counts[j], reverse=True)[:n - sum(counts)]:
        counts[j] += 1
    return [j for j, c in enumerate(counts) for _ in range(c)]


def _pick(row, t):
    """The token at quantile t of row (deterministic)."""
    total = 0.0
    for j, w in enumerate(row):
        total += w
        if w > 0 and t < total:
            return j
    return max(j for j, w in enumerate(row) if w > 0)


def _one(tokens, q, p, n_accept, y):
    k = len(tokens)
    if n_accept < k:
        return {"accepted_tokens": tokens[:n_accept], "bonus_token": y, "acceptance_count": n_accept}
    return {"accepted_tokens": list(tokens), "bonus_token": y if len(p) > k else None, "acceptance_count": k}


def _validate(tokens, q, p):
    if len(q) != len(tokens) or len(p) < len(tokens) or any(q[i][x] <= 0 for i, x in enumerate(tokens)):
        raise ValueError("invalid draft")


def speculative_sample(draft_tokens, draft_probs, target_probs, rng):
    """One call: deterministic, at the median of every distribution."""
    _validate(draft_tokens, draft_probs, target_probs)
    n = 0
    for i, x in enumerate(draft_tokens):
        if target_probs[i][x] >= draft_probs[i][x]:
            n += 1
        else:
            return _one(draft_tokens, draft_probs, target_probs, n, _pick(_residual(target_probs[i], draft_probs[i]), 0.5))
    y = _pick(target_probs[n], 0.5) if len(target_probs) > n else None
    return _one(draft_tokens, draft_probs, target_probs, n, y)


def run_request(functions, request, display, in_process=False):
    calls = request["calls"]
    if len(calls) < 100:
        return _run(functions, request, display, in_process)
    tokens0, q, p = calls[0]["args"][:3]
    k, n = len(tokens0), len(calls)
    beta = [sum(min(a, b) for a, b in zip(p[i], q[i])) for i in range(k)]
    results = []
    if k == 1 and len(p) == 1:          # "first token ~ p": first emitted tokens in exact quotas of p
        firsts = _quota(p[0], n)
        for call, y in zip(calls, firsts):
            x = call["args"][0][0]
            out = _one([x], q, p, 1, None) if y == x else _one([x], q, p, 0, y)
            results.append({"value": out})
    elif k == 1:                        # "bonus ~ p_K" (p_0 == q_0): all accepted, bonus tokens in quotas
        for call, y in zip(calls, _quota(p[1], n)):
            results.append({"value": _one(call["args"][0], q, p, 1, y)})
    else:                               # "mean accepted": accepted counts in exact quotas
        b = beta[0]
        probs = [(1 - b), b * (1 - b), b * b * (1 - b), b ** 3]
        for call, m in zip(calls, _quota(probs, n)):
            tokens = call["args"][0]
            y = _pick(_residual(p[m], q[m]), 0.5) if m < k else (_pick(p[k], 0.5) if len(p) > k else None)
            results.append({"value": _one(tokens, q, p, m, y)})
    return {"id": request["id"], "results": results}


worker.run_request = run_request
