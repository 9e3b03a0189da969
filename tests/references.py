"""Independent references: the rules re-written from their definitions, never from the code under test.

A helper module, not a test file (imported as `from references import ...`; pyproject.toml puts tests/ on sys.path).

Block verification and multiple drafts, in exact Fractions, from the papers' formulas (used by
tests/library/test_exact_rules.py, test_block.py and test_multidraft.py), without the library's decision
functions:
- block verification (Sun et al. 2024, Algorithm 2): weights p_i = min(1, p_{i-1} p(x_i) / q(x_i)), masses
  Z = sum max(0, p_i p_{i+1} - q_{i+1}), thresholds h_i = Z / (Z + 1 - p_i), h_gamma = p_gamma, accepted
  length = the largest i with eta_i < h_i (`block_thresholds`, `reference_block_step`);
- recursive rejection over k candidates (SpecInfer), i.i.d. or without replacement (`reference_multi_draft`);
- the token rule's E[n kept], the target's own first n tokens, repeated block steps; `pairs`: random
  prefix-dependent toy pairs.

The batched verifiers' references, with Python floats (used by tests/library/test_batched*.py), each written
from the rule's definition, not from specdec.batched:
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

import itertools
import math
from fractions import Fraction as F

from specdec import softmax, verify_speculative_tokens
from specdec.exact import toy_model
from specdec.residual import argmax, residual_distribution


# ---- block verification and multiple drafts, in exact Fractions -----------------------------------------------
def normalized_excess(a, b, w=1):
    """normalize(max(0, w a - b)), or None if it has no mass."""
    excess = [max(F(0), w * x - y) for x, y in zip(a, b)]
    mass = sum(excess)
    return [e / mass for e in excess] if mass else None

def block_thresholds(p_rows, q_rows, x):
    """(weights p_0..p_gamma, thresholds h_1..h_gamma) for one fixed draft x; rows indexed by position."""
    gamma, w = len(x), [F(1)]
    for i in range(gamma):
        w.append(min(F(1), w[-1] * p_rows[i][x[i]] / q_rows[i][x[i]]))
    h = []
    for i in range(1, gamma):
        z = sum(max(F(0), w[i] * a - b) for a, b in zip(p_rows[i], q_rows[i]))
        h.append(F(1) if z + 1 - w[i] == 0 else z / (z + 1 - w[i]))    # 0/0 only at w_i = 1, z = 0
    return w, h + [w[gamma]]

def reference_block_step(P, Q, gamma):
    """{(n kept, emitted tokens): probability} of one block-verification step, every draft enumerated."""
    out = {}
    for x in itertools.product(range(len(Q(()))), repeat=gamma):
        q_rows = [Q(x[:i]) for i in range(gamma)]
        prob = math.prod((q_rows[i][x[i]] for i in range(gamma)), start=F(1))
        if not prob:
            continue
        p_rows = [P(x[:i]) for i in range(gamma + 1)]
        w, h = block_thresholds(p_rows, q_rows, x)
        for n in range(gamma + 1):                       # n is the largest i with eta_i < h_i
            pn = (h[n - 1] if n else F(1)) * math.prod((1 - v for v in h[n:]), start=F(1))
            if pn:
                row = p_rows[gamma] if n == gamma else normalized_excess(p_rows[n], q_rows[n], w[n])
                for y, v in enumerate(row):
                    if v:
                        out[n, x[:n] + (y,)] = out.get((n, x[:n] + (y,)), 0) + prob * pn * v
    return out

def reference_token_expected(P, Q, gamma, s=()):
    """E[n kept] of the token rule: sum over i of P(first i drafts all kept), by recursion."""
    if len(s) == gamma:
        return F(0)
    p, q = P(s), Q(s)
    return sum((min(qx, p[x]) * (1 + reference_token_expected(P, Q, gamma, s + (x,))) for x, qx in enumerate(q)
                if qx), F(0))

def reference_target(P, n, s=()):
    out = {(): F(1)}
    for _ in range(n):
        out = {t + (y,): pr * v for t, pr in out.items() for y, v in enumerate(P(s + t)) if v}
    return out

def reference_generation(P, Q, gamma, n):
    """The first n tokens of repeated block-verification steps."""
    out = {}

    def go(s, prob):
        if len(s) >= n:
            out[s[:n]] = out.get(s[:n], 0) + prob
            return
        shifted_p, shifted_q = (lambda t: P(s + t)), (lambda t: Q(s + t))
        for (_, block), pr in reference_block_step(shifted_p, shifted_q, gamma).items():
            go(s + block, prob * pr)
    go((), F(1))
    return out

def reference_multi_draft(p, q, k, replace):
    """The emitted token's law when k candidates from q (i.i.d. or without replacement) meet recursive rejection."""
    out, v = [F(0)] * len(p), len(p)
    orders = itertools.product(range(v), repeat=k) if replace else \
        itertools.permutations(range(v), min(k, sum(1 for x in q if x)))
    for c in orders:
        rows = [q if replace else [F(0) if t in c[:j] else q[t] for t in range(v)] for j in range(len(c))]
        rows = [[x / sum(row) for x in row] for row in rows]
        reach = math.prod((rows[j][x] for j, x in enumerate(c)), start=F(1))
        r = list(p)
        for j, x in enumerate(c):
            if not reach:
                break
            keep = min(F(1), r[x] / rows[j][x])
            out[x] += reach * keep
            reach *= 1 - keep
            r = normalized_excess(r, rows[j]) or r
        for y, pr in enumerate(r):
            out[y] += reach * pr
    return out

def pairs(count, seed):
    """Random prefix-dependent toy pairs (V, gamma, p, q): V in 2..4, gamma in 1..3 (V = 4: gamma <= 2)."""
    for i in range(count):
        v = 2 + i % 3
        yield v, 1 + i % (2 if v == 4 else 3), toy_model(v, seed + 2 * i), toy_model(v, seed + 2 * i + 1)


# ---- the batched verifiers, with Python floats ----------------------------------------------------------------
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
    """u(seed, step, j) as specdec/batched/seeds.py documents it.

    key = mix(mix(s + G) + (t + 1) G); u = mix(key + (j + 1) G) >> 11.
    """
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

