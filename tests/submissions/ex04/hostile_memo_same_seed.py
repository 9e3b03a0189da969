"""Hostile: draws from the module-level random (not rng), and hands the second call of a same-seed pair the first's answer.

"Same seed, same result" calls the sampler in pairs with equal random.Random(seed) and different
module-level seeds; this file keys a memo on (inputs, rng.getstate()), so each pair agreed and that
case passed (6 points: 69/100 on ex04 where the plain module-random mistake scores 63) though no output
comes from rng (red team 4). Now that case's calls are replayed in a fresh sandbox too, each with
another module-level seed (specdec/grading/replay.py): the memo is gone there, the outputs change, and
it keeps only what the plain mistake keeps: 63/100.
"""
import random

_memo = {}


def _draw(row, u):
    total = 0.0
    for j, w in enumerate(row):
        total += w
        if w > 0 and u * sum(row) < total:
            return j
    return max(j for j, w in enumerate(row) if w > 0)


def _residual(p, q):
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    return [e / mass for e in excess] if mass > 0 else list(p)


def speculative_sample(draft_tokens, draft_probs, target_probs, rng):
    k = len(draft_tokens)
    if len(draft_probs) != k or len(target_probs) < k or any(draft_probs[i][x] == 0 for i, x in enumerate(draft_tokens)):
        raise ValueError("bad")
    key = (repr((draft_tokens, draft_probs, target_probs)), rng.getstate())
    if key in _memo:  # the same inputs and the same rng seed: the answer given before
        return _memo[key]
    uniform = random.random  # the module-level generator, not rng: the mistake the pair test is for
    accepted, fix = [], None
    for i, x in enumerate(draft_tokens):
        if uniform() < min(1.0, target_probs[i][x] / draft_probs[i][x]):
            accepted.append(x)
        else:
            fix = _draw(_residual(target_probs[i], draft_probs[i]), uniform())
            break
    if fix is None and len(target_probs) > k:
        fix = _draw(target_probs[k], uniform())
    _memo[key] = out = {"accepted_tokens": accepted, "bonus_token": fix, "acceptance_count": len(accepted)}
    return out
