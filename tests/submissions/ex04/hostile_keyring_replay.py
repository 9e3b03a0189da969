"""Hostile: hostile_deterministic's exact quotas, carried to the replay sandbox through the kernel keyring.

It never samples a correction token (the median of the residual, always) and hands out the statistical
cases' outputs in exact quotas. Red team 4 caught such a file with the replay (a fresh sandbox must give
every replayed call the answer it first had). This one sorts each batch by a number drawn from the call's
rng, cuts the sorted batch into its quota blocks and stores the cut points in the user keyring (add_key);
in the replay sandbox it reads them back (keyctl) and so gives every call its first answer. Red team 5:
it scored 75/100 in bwrap mode (63 without the keyring: hostile_deterministic's score), passing every replay,
because every sandbox of one file ran as the same uid (so the same user keyring) and the seccomp filter let
the keyring calls through. Now the filter refuses add_key, request_key and keyctl, and every sandbox runs
as a uid of its own: the replay sandbox finds no cut points, and every statistical case of 2000 calls fails
its replay (69/100: the deterministic answers keep its exact cases and "same seed, same result").
"""
import ctypes
import hashlib
import json
import random
import sys

worker = sys.modules["__main__"]
_run = worker.run_request
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_cuts = {}


def _sys(nr, *args):
    return _libc.syscall(ctypes.c_long(nr), *[ctypes.c_char_p(a) if isinstance(a, bytes) else ctypes.c_long(a)
                                              for a in args])


def _key(q, p):
    return ("sd" + hashlib.blake2b(json.dumps([q, p]).encode(), digest_size=8).hexdigest()).encode()


def _store(name, cuts):
    data = json.dumps(cuts).encode()
    _sys(248, b"user", name, data, len(data), -4)  # add_key(type, description, payload, len, @u)


def _load(name):
    if name in _cuts:
        return _cuts[name]
    key = _sys(250, 10, -4, b"user", name, 0)  # keyctl(KEYCTL_SEARCH, @u, "user", name)
    if key < 0:
        return None
    buf = ctypes.create_string_buffer(4096)
    n = _sys(250, 11, key, ctypes.addressof(buf), 4096)  # KEYCTL_READ
    _cuts[name] = json.loads(buf.raw[:n]) if n > 0 else None
    return _cuts[name]


def _u(call):
    return random.Random(call["args"][3]["$rng"]).random()


def _label(u, cuts):
    return sum(u >= c for c in cuts)


def _answer(call, m):
    """The answer for `call` when its quota label is `m` (as hostile_deterministic gives it)."""
    tokens, q, p = call["args"][:3]
    k = len(tokens)
    if k == 1 and len(p) == 1:
        return _one(tokens, q, p, 1, None) if m == tokens[0] else _one(tokens, q, p, 0, m)
    if k == 1:
        return _one(tokens, q, p, 1, m)
    y = _pick(_residual(p[m], q[m]), 0.5) if m < k else (_pick(p[k], 0.5) if len(p) > k else None)
    return _one(tokens, q, p, m, y)


def _weights(q, p):
    k = len(q)
    if k == 1 and len(p) == 1:
        return p[0]
    if k == 1:
        return p[1]
    b = sum(min(x, y) for x, y in zip(p[0], q[0]))
    return [(1 - b), b * (1 - b), b * b * (1 - b), b ** 3]


def run_request(functions, request, display, in_process=False):
    calls = request["calls"]
    first = calls[0]["args"]
    if len(calls) >= 100 and all(c["args"][1:3] == first[1:3] for c in calls):  # a statistical case, whole
        order = sorted(range(len(calls)), key=lambda i: _u(calls[i]))
        labels = _quota(_weights(*first[1:3]), len(calls))
        out = [None] * len(calls)
        for i, m in zip(order, labels):
            out[i] = _answer(calls[i], m)
        cuts = [_u(calls[order[j]]) for j in range(1, len(calls)) if labels[j] != labels[j - 1]]
        _store(_key(*first[1:3]), [cuts, sorted(set(labels))])
        return {"id": request["id"], "results": [{"value": v} for v in out]}
    results = []
    for call in calls:
        stored = _load(_key(*call["args"][1:3])) if len(call["args"]) == 4 else None
        if stored is None:
            reply = _run(functions, dict(request, calls=[call]), display, in_process)
            results += reply["results"]
            continue
        cuts, present = stored
        results.append({"value": _answer(call, present[_label(_u(call), cuts)])})
    return {"id": request["id"], "results": results}


worker.run_request = run_request



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


