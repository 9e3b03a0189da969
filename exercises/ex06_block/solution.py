"""Exercise 6: block verification (Sun, Mendlovic, Leviathan et al. 2024, arXiv 2403.10444, Algorithm 2).

The token rule of exercise 4 stops at the first rejected draft. Block verification judges the drafted
block as a whole and keeps the LONGEST prefix whose own test passes, still without changing the
target's distribution. Drafted tokens x_1..x_K are draft_tokens[0..K-1]; the rows p_i = target_probs[i]
and q_i = draft_probs[i] score x_{i+1}. Draw eta_1..eta_K = K calls of rng.random(), in order. Then:

    w_0 = 1,  w_i = min(1, w_{i-1} * p_{i-1}(x_i) / q_{i-1}(x_i))              the weights
    Z_i = sum_y max(0, w_i * p_i(y) - q_i(y))                                  for i < K
    h_i = Z_i / (Z_i + 1 - w_i) for i < K (1 when w_i = 1),  h_K = w_K         the thresholds
    n   = the largest i in 1..K with eta_i < h_i, or 0 if there is none       the tokens kept

If n = K, SAMPLE the bonus token from target_probs[K] when that row exists (else None); otherwise
SAMPLE the next token from normalize(max(0, w_n * p_n - q_n)), or from p_n if that has no mass.

    >>> block_verify([0, 1], [[2/3, 1/3]] * 2, [[1/3, 2/3], [1/3, 2/3], [0.0, 1.0]], random.Random(0))
    {'accepted_tokens': [0, 1], 'bonus_token': 1, 'acceptance_count': 2}
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


def _excess(p, q, w):
    """max(0, w p(y) - q(y)) for every y."""
    return [max(0.0, w * pj - qj) for pj, qj in zip(p, q)]


def _sample(row, rng):
    """Draw an index with probability row[j] / sum(row): walk the running sum past one uniform."""
    u = rng.random() * sum(row)
    cumulative = 0.0
    last = None
    for j, v in enumerate(row):
        if v > 0.0:
            cumulative += v
            last = j
            if u < cumulative:
                return j
    # Subtle: rounding can leave the running sum a hair below u; never return a zero-mass index.
    return last
### END SOLUTION


def block_verify(draft_tokens: list[int], draft_probs: list[list[float]],
                 target_probs: list[list[float]], rng: random.Random) -> dict:
    """Verify a drafted block jointly; return exercise 4's dict, with the same target distribution.
    Args:
        draft_tokens: Sequence of K tokens proposed by draft model (each drawn from its draft row).
        draft_probs: Draft model probabilities for each proposed step (K rows).
        target_probs: Target model probabilities for each step (length >= K; row K, if present, gives the bonus).
        rng: A random.Random; draw eta_1..eta_K with rng.random() first, then sample the next token.
    Returns:
        dict with 'accepted_tokens', 'bonus_token' (the sampled next token, or None),
        and 'acceptance_count'.

    >>> block_verify([1], [[0.5, 0.5]], [[1.0, 0.0], [0.5, 0.5]], random.Random(0))  # p(1) = 0: never kept
    {'accepted_tokens': [], 'bonus_token': 0, 'acceptance_count': 0}
    """
    ### BEGIN SOLUTION
    # Validation as in exercise 4.
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

    eta = [rng.random() for _ in range(k)]             # eta_1..eta_K, all drawn first
    w = [1.0]                                           # w[i]: the weight of the prefix x_1..x_i
    for i, x in enumerate(tokens):
        w.append(min(1.0, w[i] * p[i][x] / q[i][x]))
    n = 0
    for i in range(k, 0, -1):                           # the LAST i that passes: scan from the end
        if i == k:
            h = w[k]
        elif w[i] >= 1.0:
            h = 1.0                                     # Z / Z, or 0/0: a prefix p fully supports is kept
        else:
            z = math.fsum(_excess(p[i], q[i], w[i]))
            h = z / (z + 1.0 - w[i])
        if eta[i - 1] < h:
            n = i
            break
    if n == k:                                          # all kept: a free token from row K, if scored
        bonus = _sample(p[k], rng) if len(p) > k else None
    else:                                               # the next token: what w_n p_n has that q_n lacks
        excess = _excess(p[n], q[n], w[n])
        mass = math.fsum(excess)
        bonus = _sample([e / mass for e in excess] if mass > 0.0 else p[n], rng)
    return {"accepted_tokens": tokens[:n], "bonus_token": bonus, "acceptance_count": n}
    ### END SOLUTION
