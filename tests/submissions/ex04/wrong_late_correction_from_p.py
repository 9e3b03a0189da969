"""Wrong: right at step 0, but a rejection at a LATER step resamples from p, not from that step's residual.

A plausible learner's mistake: the sampler is not lossless after step 0. Found by the red team when
ex04 judged only step 0 and aggregate counts (it scored 100/100 then); the case "steps after the
first: joint law" (K = 3, step 0 certain, steps 1 and 2 doubtful, judged against the exact law of
(accepted, emitted)) now catches it, and it is catalogued as `late_correction_from_p`.
"""
import random


def _residual(p, q):
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    return [e / mass for e in excess] if mass > 0 else list(p)


def _sample(row, rng):
    u = rng.random() * sum(row)
    total, last = 0.0, None
    for j, w in enumerate(row):
        if w > 0:
            total += w
            last = j
            if u < total:
                return j
    return last


def speculative_sample(draft_tokens, draft_probs, target_probs, rng):
    k = len(draft_tokens)
    if len(draft_probs) != k or len(target_probs) < k:
        raise ValueError("lengths")
    for i, x in enumerate(draft_tokens):
        if draft_probs[i][x] <= 0:
            raise ValueError("q(x) = 0")
    accepted = []
    for i, x in enumerate(draft_tokens):
        p, q = target_probs[i], draft_probs[i]
        if rng.random() < min(1.0, p[x] / q[x]):
            accepted.append(x)
            continue
        row = _residual(p, q) if i == 0 else p   # the mistake: later steps resample from p
        return {"accepted_tokens": accepted, "bonus_token": _sample(row, rng), "acceptance_count": len(accepted)}
    bonus = _sample(target_probs[k], rng) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
