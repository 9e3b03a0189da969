"""Wrong: the correction is drawn with the SAME uniform that the acceptance test just rejected.

The learner's real mistake: one `u = rng.random()` serves both the test `u < min(1, p(x)/q(x))` and, after a
rejection, the draw from the residual (its running sum walked past `u`). A rejected `u` is at least the
acceptance ratio, so the start of the residual's running sum is never reached: the corrections are biased and
the sampler is not lossless. Its exact law is enumerated by `specdec.exact.step_outcomes(..., correction="same_u")`;
the grader names it `reused_uniform` (not the argmax mistake, whose bonus is wrong too).
"""


def _residual(p, q):
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    return [e / mass for e in excess] if mass > 0 else list(p)


def _sample_at(row, u):
    cut, total, last = u * sum(row), 0.0, None
    for j, w in enumerate(row):
        if w > 0:
            total += w
            last = j
            if cut < total:
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
        u = rng.random()
        if u < min(1.0, p[x] / q[x]):
            accepted.append(x)
            continue
        fix = _sample_at(_residual(p, q), u)   # the mistake: u again, not a fresh rng.random()
        return {"accepted_tokens": accepted, "bonus_token": fix, "acceptance_count": len(accepted)}
    bonus = _sample_at(target_probs[k], rng.random()) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
