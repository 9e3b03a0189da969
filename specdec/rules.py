"""The chain rules side by side: which drafted tokens a verifier keeps, and what it emits next (plain Python).

One drafted chain x_0..x_{K-1} (K = gamma; ids as in the graded problem), draft rows
q_i = draft_probs[i] and target rows p_i = target_probs[i]; row p_K, if scored, gives
the bonus. Every rule returns (n, y): keep the first n drafts, then emit y (the
correction at the first failure, or the bonus after all K; None if there is no row K).
They differ only in the test and in how y is picked:

    rule          keep x_i while                           then emit y                           distributed as p?
    graded_rule   u_i <= min(1, p_i(x_i) / q_i(x_i))       argmax of the residual (or of p_K)    no: the graded variant
    token_rule    u_i <  min(1, p_i(x_i) / q_i(x_i))       a draw from the residual (or p_K)     yes (Leviathan et al.)
    block_rule    i < n, n = the LAST i with eta_i < h_i   a draw from the w_n-weighted residual yes, E[n] >= token's
    greedy_rule   x_i == argmax p_i                        argmax p_i (or p_K)                   it IS greedy decoding
    typical_rule  p_i(x_i) > min(eps, delta e^-H(p_i))     argmax p_i (or p_K)                   no (Medusa, Cai et al.)

The public entry points validate their inputs and call these loops:
`verify.verify_speculative_tokens` (graded), `sampling.speculative_sample` (token),
`block.block_verify` (block, derived there), `typical.greedy_verify` and
`typical.typical_verify`; `decode.speculative_generate` calls them on NumPy rows
by passing `rows`, an object with the row operations below (`PlainRows` here).
The scalar decisions come first (`graded_accepts`, `token_accepts`, `block_weight`,
`block_threshold`, `typical_threshold`); `theory`'s exact enumeration uses the same ones.

    >>> q = [[0.5, 0.5], [0.5, 0.5]]
    >>> p = [[0.25, 0.75], [0.75, 0.25], [0.5, 0.5]]
    >>> graded_rule([0, 1], q, p, [0.4, 0.6])   # 0.4 <= 0.5 keeps x_0; 0.6 > 0.5 rejects x_1; residual [1, 0]
    (1, 0)
    >>> greedy_rule([0, 1], [argmax(row) for row in p])   # argmax p_0 is 1, not the drafted 0
    (0, 1)
    >>> typical_rule([0, 1], p)                 # both have p > min(0.09, 0.3 * 0.57): kept; bonus argmax p_2 (tie: 0)
    (2, 0)
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from .residual import argmax, residual_distribution, residual_mass, sample_from

# Medusa's defaults for typical acceptance (Cai et al. 2024): epsilon and delta.
TYPICAL_EPS, TYPICAL_DELTA = 0.09, 0.3


# ---- the decisions, one scalar function each -------------------------------------------------------------
def graded_accepts(u: float, px: float, qx: float) -> bool:
    """The graded problem's test, u <= min(1, p(x) / q(x)), with u in [0, 1].

    Written u <= p(x) / q(x): for u <= 1 the two agree (a ratio >= 1 passes both), and
    this form also works elementwise on NumPy arrays (`specdec.batched` can import it).
    """
    return u <= px / qx


def token_accepts(u: float, px: float, qx: float) -> bool:
    """The lossless test, u < min(1, p(x) / q(x)), with u ~ U[0, 1): true with probability min(1, p/q).

    Subtle: strict <, where the graded test has <=. P(u < r) is exactly r, so a token
    with p(x) = 0 is never accepted. Without the min, as `graded_accepts` (u < 1 always).
    """
    return u < px / qx


def block_weight(w: float, px: float, qx: float) -> float:
    """w_i = min(1, w_{i-1} p(x_i) / q(x_i)), w_0 = 1: how much of the drafted prefix block verification may keep."""
    return min(1, w * px / qx)


def block_threshold(w: float, z: float) -> float:
    """h = z / (z + 1 - w), with z = residual_mass(p, q, w) at the next position (Sun et al. 2024).

    Subtle: at w = 1 it is 1 (z / z), and also where z = 0 makes it 0/0: a prefix that p
    supports as fully as q did is always kept (see block.py for why that is lossless).
    """
    return 1 if w >= 1 else z / (z + 1 - w)


def typical_threshold(entropy: float, eps: float = TYPICAL_EPS, delta: float = TYPICAL_DELTA) -> float:
    """min(eps, delta exp(-H)): Medusa's bar for p(x); low-entropy rows ask for more."""
    return min(eps, delta * math.exp(-entropy))


def entropy(row: Sequence[float]) -> float:
    """H(p) = -sum p log p in nats (0 log 0 = 0)."""
    return -math.fsum(v * math.log(v) for v in row if v > 0)


class PlainRows:
    """The row operations the rules need, on lists of floats. decode.py passes NumPy ones with these names."""

    residual = staticmethod(residual_distribution)     # normalize(max(0, w p - q)); p where that has no mass
    residual_mass = staticmethod(residual_mass)        # sum max(0, w p - q)
    sample = staticmethod(sample_from)                 # one draw, inverse CDF, one uniform
    argmax = staticmethod(argmax)                      # ties: the lower index
    entropy = staticmethod(entropy)


# ---- the rules: each returns (n kept, next token) ------------------------------------------------------
def graded_rule(tokens: Sequence[int], q: Sequence[Sequence[float]], p: Sequence[Sequence[float]],
                u: Sequence[float]) -> tuple[int, int]:
    """The graded problem's rule, u given: keep while the test passes; argmax of the residual or of p_K."""
    for i, x in enumerate(tokens):
        if not graded_accepts(u[i], p[i][x], q[i][x]):
            return i, argmax(residual_distribution(p[i], q[i]))   # first rejection: correct and stop
    k = len(tokens)
    return k, (argmax(p[k]) if len(p) > k else None)            # all K kept: the target's next token, if scored


def token_rule(tokens: Sequence[int], q: Sequence[Sequence[float]], p: Sequence[Sequence[float]],
               rng: random.Random, rows: type[PlainRows] = PlainRows) -> tuple[int, int]:
    """Speculative sampling: one uniform per verified draft; the correction or the bonus is a draw."""
    for i, x in enumerate(tokens):
        if not token_accepts(rng.random(), p[i][x], q[i][x]):
            return i, rows.sample(rows.residual(p[i], q[i]), rng)
    k = len(tokens)
    return k, (rows.sample(p[k], rng) if len(p) > k else None)


def block_rule(tokens: Sequence[int], q: Sequence[Sequence[float]], p: Sequence[Sequence[float]],
               rng: random.Random, rows: type[PlainRows] = PlainRows) -> tuple[int, int]:
    """Block verification (Sun et al. 2024, Algorithm 2): keep the LONGEST prefix whose own test passes.

    Uniforms: eta_1..eta_K drawn first, in order, then one for the draw of y.
    At K = 1 this is `token_rule`, uniform for uniform.
    """
    k = len(tokens)
    eta = [rng.random() for _ in range(k)]
    w = [1]                                                    # w[i]: the weight of the prefix x_0..x_{i-1}
    for i, x in enumerate(tokens):
        w.append(block_weight(w[i], p[i][x], q[i][x]))
    n = 0
    for i in range(k, 0, -1):  # the last i with eta_i < h_i: scan from the end, stop at the first pass
        if i == k:
            h = w[k]
        elif w[i] == 0:
            h = 0                                              # z = 0 too: this prefix is never kept
        else:
            h = block_threshold(w[i], rows.residual_mass(p[i], q[i], w[i]))
        if eta[i - 1] < h:
            n = i
            break
    if n == k:
        return k, (rows.sample(p[k], rng) if len(p) > k else None)
    return n, rows.sample(rows.residual(p[n], q[n], w[n]), rng)


def greedy_rule(tokens: Sequence[int], best: Sequence[int]) -> tuple[int, int]:
    """Greedy verification; best[i] = argmax p_i (ties: the lower id). p is read only through its argmax."""
    for i, x in enumerate(tokens):
        if x != best[i]:
            return i, best[i]
    k = len(tokens)
    return k, (best[k] if len(best) > k else None)


def typical_rule(tokens: Sequence[int], p: Sequence[Sequence[float]], eps: float = TYPICAL_EPS,
                 delta: float = TYPICAL_DELTA, rows: type[PlainRows] = PlainRows) -> tuple[int, int]:
    """Typical acceptance: keep x_i while p_i(x_i) > min(eps, delta exp(-H(p_i))); then argmax p (greedy)."""
    for i, x in enumerate(tokens):
        if not p[i][x] > typical_threshold(rows.entropy(p[i]), eps, delta):
            return i, rows.argmax(p[i])
    k = len(tokens)
    return k, (rows.argmax(p[k]) if len(p) > k else None)
