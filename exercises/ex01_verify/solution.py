"""Exercise 1: verify a speculative draft (the graded problem).

A draft model proposed K tokens; the target model scored the same positions. Walk the draft left to
right with target row p = target_probs[i] and draft row q = draft_probs[i]: accept x = draft_tokens[i]
when random_samples[i] <= min(1, p(x) / q(x)). At the first rejection the bonus token is the argmax of
normalize(max(0, p - q)) and verification stops. If all K are accepted and target_probs has a row K, the
bonus token is argmax target_probs[K]; otherwise it is None. Argmax ties go to the lower token index.
A residual with no mass falls back to p. Mismatched lengths and a drafted token with q(x) = 0 raise
ValueError, and so does a row that is not a distribution, its message naming the row (target_probs[1]).

    >>> verify_speculative_tokens([0], [[0.8, 0.2]], [[0.2, 0.8]], [0.5])  # 0.5 > 0.2 / 0.8: rejected
    {'accepted_tokens': [], 'bonus_token': 1, 'acceptance_count': 0}
"""

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


def _argmax(row):
    """Index of the largest entry; on a tie the lower index wins (strict > below)."""
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best]:
            best = j
    return best


def _residual(p, q):
    """normalize(max(0, p - q)); when it has no mass (p == q), fall back to p."""
    excess = [max(0.0, pj - qj) for pj, qj in zip(p, q)]
    mass = sum(excess)
    if mass <= 0.0:
        return list(p)
    return [e / mass for e in excess]
### END SOLUTION


def verify_speculative_tokens(draft_tokens: list[int], draft_probs: list[list[float]],
                              target_probs: list[list[float]], random_samples: list[float]) -> dict:
    """Verify draft tokens via speculative decoding rejection sampling.
    Args:
        draft_tokens: Sequence of K tokens proposed by draft model.
        draft_probs: Draft model probabilities for each proposed step.
        target_probs: Target model probabilities for each step (length >= K).
        random_samples: Uniform random samples in [0, 1) for acceptance test.
    Returns:
        dict with 'accepted_tokens', 'bonus_token', and 'acceptance_count'.
    """
    ### BEGIN SOLUTION
    # 1. Lengths: one q row and one u per drafted token; p scores at least those K positions.
    draft_tokens, draft_probs = list(draft_tokens), list(draft_probs)
    target_probs, random_samples = list(target_probs), list(random_samples)
    k = len(draft_tokens)
    if len(draft_probs) != k:
        raise ValueError(f"len(draft_probs) is {len(draft_probs)} but len(draft_tokens) is {k}")
    if len(target_probs) < k:
        raise ValueError(f"len(target_probs) is {len(target_probs)} but len(draft_tokens) is {k}")
    if len(random_samples) != k:
        raise ValueError(f"len(random_samples) is {len(random_samples)} but len(draft_tokens) is {k}")

    # 2. Values: every row a distribution over one vocabulary, tokens in it, u in [0, 1].
    p = [_check_row(row, f"target_probs[{i}]", len(target_probs[0])) for i, row in enumerate(target_probs)]
    vocab = len(p[0]) if p else 0
    q = [_check_row(row, f"draft_probs[{i}]", vocab) for i, row in enumerate(draft_probs)]
    tokens = []
    for i, x in enumerate(draft_tokens):
        if isinstance(x, bool):
            raise TypeError(f"draft_tokens[{i}] is {x!r}: a token id must be an integer")
        x = operator.index(x)  # int or NumPy integer; 2.0 raises TypeError
        if not 0 <= x < vocab:
            raise ValueError(f"draft_tokens[{i}] is {x}, outside the vocabulary [0, {vocab})")
        if q[i][x] == 0.0:  # the ratio p/q would divide by zero, and q could not have drafted x
            raise ValueError(f"draft_probs[{i}][{x}] is 0 but draft_tokens[{i}] is {x}")
        tokens.append(x)
    u = []
    for i, v in enumerate(random_samples):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"random_samples[{i}] must be a real number, got {v!r}")
        if not 0.0 <= float(v) <= 1.0:  # also refuses NaN
            raise ValueError(f"random_samples[{i}] is {v}, outside [0, 1]")
        u.append(float(v))

    # 3. The rule: accept while u_i <= min(1, p(x)/q(x)); the first rejection ends the step.
    accepted = []
    for i, x in enumerate(tokens):
        if u[i] <= min(1.0, p[i][x] / q[i][x]):
            accepted.append(x)
        else:
            bonus = _argmax(_residual(p[i], q[i]))
            return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
    bonus = _argmax(p[k]) if len(p) > k else None  # all accepted: the target's own next token, if scored
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
    ### END SOLUTION
