"""Plain-Python references for the batched tests (tests/test_batched*.py); a helper module, not a test file.

Each reference is written from the rule's definition with Python floats, not from specdec.batched:
- softmax rows: `specdec.softmax` (plain Python, math.fsum; temperature 0 is one-hot at the argmax);
- the graded rule: `specdec.verify_speculative_tokens`, and `graded_row`, the same walk that also
  reports how close each decision came to a rounding boundary;
- the sampled rule consuming GIVEN uniforms (`sampled_row`): `speculative_sample` draws from
  random.Random, so the per-row streams cannot be fed to it;
- greedy decoding (`greedy_row`) and SplitMix64 (`splitmix64`) with Python integers.

"near" flags: a float32 logsumexp and a float64 softmax agree to ~1e-6 relative, so a decision
whose margin is below `tol` may legitimately differ between two correct implementations; the
tests compare every row that is not near and count the near ones (they must be rare).
"""

import math

import numpy as np

from specdec import softmax, verify_speculative_tokens
from specdec.residual import argmax, residual_distribution

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64_mix(z):
    """SplitMix64's output function (Steele, Lea & Flood 2014), Python integers modulo 2**64."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def splitmix64(seed, n):
    """The first n outputs of the SplitMix64 generator seeded with `seed`."""
    out, state = [], seed
    for _ in range(n):
        state = (state + GOLDEN) & MASK64
        out.append(splitmix64_mix(state))
    return out


def row_uniform(seed, step, j):
    """u(seed, step, j) as batched_seeds documents it: key = mix(mix(s + G) + (t + 1) G); u = mix(key + (j + 1) G) >> 11."""
    key = splitmix64_mix((splitmix64_mix((seed + GOLDEN) & MASK64) + (step + 1) * GOLDEN) & MASK64)
    return (splitmix64_mix((key + (j + 1) * GOLDEN) & MASK64) >> 11) / 2.0 ** 53


def softmax_rows(logits, temperature):
    """Rows softmax(z / T) of a [rows, V] array of logits, as lists of Python floats."""
    return [softmax([float(v) for v in row], temperature) for row in logits]


def _gap(row):
    """Relative distance between the largest entry and the next smaller one (inf if none): exact ties are no gap."""
    top = max(row)
    below = [v for v in row if v < top]
    return (top - max(below)) / top if below and top > 0 else math.inf


def _near_accept(u, px, qx, tol):
    """Is u within tol of min(1, p/q), where rounding could flip the test? (p = 0 and p/q >= 1 + tol are exact.)"""
    ratio = px / qx
    return px > 0 and ratio < 1 + tol and abs(u - min(1.0, ratio)) <= tol


def graded_row(tokens, q, p, u, tol=0.0):
    """(count, bonus or -1, near) of the graded rule on one row of Python lists (k = len(tokens) real drafts)."""
    near = False
    for i, x in enumerate(tokens):
        near |= _near_accept(u[i], p[i][x], q[i][x], tol)
        if not u[i] <= min(1.0, p[i][x] / q[i][x]):
            residual = residual_distribution(p[i], q[i])
            return i, argmax(residual), near or _gap(residual) <= tol
    k = len(tokens)
    if len(p) > k:
        return k, argmax(p[k]), near or _gap(p[k]) <= tol
    return k, -1, near


def _inverse_cdf(weights, u, tol):
    """(first j whose running sum exceeds u * total, near): a plain sequential inverse CDF."""
    total = math.fsum(weights)
    t, running, near = u * total, 0.0, False
    for j, w in enumerate(weights):
        if w > 0:
            running += w
            near |= abs(running - t) <= tol * total
            if running > t:
                return j, near
    return max(j for j, w in enumerate(weights) if w > 0), near


def sampled_row(tokens, q, p, uniforms, tol=0.0):
    """(count, bonus or -1, near) of the sampled rule on one row, with uniforms[i] for position i and
    uniforms[k] for the correction or bonus (the slot sample_batch's per-row seeds give it)."""
    k, near = len(tokens), False
    for i, x in enumerate(tokens):
        near |= _near_accept(uniforms[i], p[i][x], q[i][x], tol)
        if not uniforms[i] < min(1.0, p[i][x] / q[i][x]):
            j, close = _inverse_cdf(residual_distribution(p[i], q[i]), uniforms[k], tol)
            return i, j, near or close
    if len(p) > k:
        j, close = _inverse_cdf(p[k], uniforms[k], tol)
        return k, j, near or close
    return k, -1, near


def greedy_row(tokens, target_logits):
    """(count, bonus or -1) of greedy verification: accept while x_i is argmax z_i (ties: lower index)."""
    rows = [[float(v) for v in row] for row in target_logits]
    for i, x in enumerate(tokens):
        best = argmax(rows[i])
        if x != best:
            return i, best
    k = len(tokens)
    return k, (argmax(rows[k]) if len(rows) > k else -1)


def plain_verify_row(tokens, q, p, u):
    """verify_speculative_tokens on one row -> (count, bonus or -1)."""
    out = verify_speculative_tokens(list(tokens), q, p, list(u))
    assert out["accepted_tokens"] == list(tokens)[:out["acceptance_count"]]
    return out["acceptance_count"], (-1 if out["bonus_token"] is None else out["bonus_token"])


def max_z(samples, probs):
    """Largest per-bin z-score of the ids `samples` against `probs`; a zero-mass bin that is hit is infinite."""
    n = len(samples)
    counts = np.bincount(np.asarray(samples), minlength=len(probs))
    z = [abs(c - n * pr) / math.sqrt(n * pr * (1 - pr)) if 0 < pr < 1 else (0.0 if c == n * pr else math.inf)
         for c, pr in zip(counts, probs)]
    return max(z)
