"""Exercise 4: the lossless speculative sampler (Leviathan et al. 2023, Algorithm 1).

The graded rule of exercise 1 takes two argmaxes, which makes it deterministic and NOT lossless. Here
they become draws. For each drafted x = draft_tokens[i], with target row p = target_probs[i] and draft
row q = draft_probs[i]: draw u = rng.random() and accept x if u < min(1, p(x) / q(x)). At the first
rejection, SAMPLE the replacement from normalize(max(0, p - q)) (or from p if that has no mass) and
stop. If all K are accepted, SAMPLE the bonus token from target_probs[K] when that row exists (else
None). When each x was drawn from q, every emitted token is then distributed exactly as p.

Warning: draw a FRESH u = rng.random() for the replacement. The u the test rejected is at least
min(1, p(x) / q(x)), so reusing it never reaches the start of the residual's running sum: the sampler
is then biased, and the grader names that mistake.

    >>> speculative_sample([0], [[1.0, 0.0]], [[0.0, 1.0]], random.Random(0))  # p(0) = 0: always rejected
    {'accepted_tokens': [], 'bonus_token': 1, 'acceptance_count': 0}
"""

import random  # the stub needs it too: the signature names random.Random

### BEGIN SOLUTION
import math
import numbers
import operator

# A row must sum to 1 within this: float32 softmax output passes, logits or raw weights do not.
SUM_TOLERANCE = 1e-4


def _check_row(row, name, width=None):
    """Return `row` as a fresh list of floats forming a distribution, or raise naming it."""
    row = list(row)
    if not row:
        raise ValueError(f"{name} is empty: a distribution needs at least one token")
    if width is not None and len(row) != width:
        raise ValueError(f"{name} has {len(row)} entries but the vocabulary has {width} (target_probs[0])")
    values = []
    for j, v in enumerate(row):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name}[{j}] must be a real number, got {v!r}")
        v = float(v)
        if not math.isfinite(v) or v < 0.0:
            raise ValueError(f"{name}[{j}] is {v}: probabilities must be finite and >= 0 (logits passed?)")
        values.append(v)
    if abs(math.fsum(values) - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"{name} sums to {math.fsum(values):.6g}, not 1: pass probabilities, not logits")
    return values


def _residual(p, q):
    """normalize(max(0, p - q)); when it has no mass (p == q), fall back to p."""
    excess = [max(0.0, pj - qj) for pj, qj in zip(p, q)]
    mass = sum(excess)
    if mass <= 0.0:
        return list(p)
    return [e / mass for e in excess]


def _sample(row, rng):
    """Draw an index with probability row[j] / sum(row): walk the running sum past one uniform."""
    u = rng.random() * sum(row)
    cumulative = 0.0
    last = None
    for j, w in enumerate(row):
        if w > 0.0:
            cumulative += w
            last = j
            if u < cumulative:
                return j
    # Subtle: rounding can leave the running sum a hair below u; never return a zero-mass index.
    return last
### END SOLUTION


def speculative_sample(draft_tokens: list[int], draft_probs: list[list[float]],
                       target_probs: list[list[float]], rng: random.Random) -> dict:
    """Verify draft tokens by speculative sampling: accept or resample, keeping the target distribution.
    Args:
        draft_tokens: Sequence of K tokens proposed by draft model (each drawn from its draft row).
        draft_probs: Draft model probabilities for each proposed step (K rows).
        target_probs: Target model probabilities for each step (length >= K; row K, if present, gives the bonus).
        rng: A random.Random; call rng.random() for every uniform you need.
    Returns:
        dict with 'accepted_tokens', 'bonus_token' (the resampled or bonus token, or None),
        and 'acceptance_count'.

    >>> speculative_sample([0], [[0.5, 0.5]], [[0.5, 0.5], [0.0, 1.0]], random.Random(0))  # p == q: accepted
    {'accepted_tokens': [0], 'bonus_token': 1, 'acceptance_count': 1}
    """
    ### BEGIN SOLUTION
    # Validation as in exercise 1 (minus the uniforms, which we draw ourselves).
    draft_tokens, draft_probs, target_probs = list(draft_tokens), list(draft_probs), list(target_probs)
    k = len(draft_tokens)
    if len(draft_probs) != k:
        raise ValueError(f"len(draft_probs) is {len(draft_probs)} but len(draft_tokens) is {k}")
    if len(target_probs) < k:
        raise ValueError(f"len(target_probs) is {len(target_probs)} but len(draft_tokens) is {k}")
    p = [_check_row(row, f"target_probs[{i}]", len(target_probs[0])) for i, row in enumerate(target_probs)]
    vocab = len(p[0]) if p else 0
    q = [_check_row(row, f"draft_probs[{i}]", vocab) for i, row in enumerate(draft_probs)]
    tokens = []
    for i, x in enumerate(draft_tokens):
        if isinstance(x, bool):
            raise TypeError(f"draft_tokens[{i}] is {x!r}: a token id must be an integer")
        x = operator.index(x)
        if not 0 <= x < vocab:
            raise ValueError(f"draft_tokens[{i}] is {x}, outside the vocabulary [0, {vocab})")
        if q[i][x] == 0.0:
            raise ValueError(f"draft_probs[{i}][{x}] is 0 but draft_tokens[{i}] is {x}")
        tokens.append(x)

    accepted = []
    for i, x in enumerate(tokens):
        # Strict <: u ~ U[0, 1) makes P(u < r) exactly r, so a token with p(x) = 0 is never accepted.
        if rng.random() < min(1.0, p[i][x] / q[i][x]):
            accepted.append(x)
        else:  # first rejection: draw the replacement from what p has that q lacks, and stop
            correction = _sample(_residual(p[i], q[i]), rng)
            return {"accepted_tokens": accepted, "bonus_token": correction, "acceptance_count": len(accepted)}
    bonus = _sample(p[k], rng) if len(p) > k else None  # all accepted: a free token from the target's row K
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
    ### END SOLUTION
