"""The chain rule's conventions, for arrays [R, ...]: every batched path calls these (NumPy).

The plain-Python modules are the definition. The accept tests ARE `rules.graded_accepts`
and `rules.token_accepts` (elementwise on arrays); the rest is restated here once, for
arrays, each marked "Convention (<module>)":

    accept, graded    u <= min(1, p(x) / q(x))                        (verify.py)
    accept, sampled   u <  min(1, p(x) / q(x)), u ~ U[0, 1)            (sampling.py)
    residual          max(0, p - q), or p itself where that has no mass (residual.py)
    argmax            ties go to the lower index                       (residual.py)
    draw              inverse CDF with one uniform per row             (sampling.py)

    >>> accept_graded(np.array([0.5, 0.5]), np.array([0.5, 0.25])).tolist()
    [True, False]
    >>> residual_weights(np.array([[0.5, 0.5], [0.2, 0.8]]), np.array([[0.5, 0.5], [0.6, 0.4]])).tolist()
    [[0.5, 0.5], [0.0, 0.4]]
"""

import numpy as np

from ..residual import argmax, residual_distribution
from ..rules import graded_accepts, token_accepts


# The batched paths form the ratio r = p(x) / q(x) themselves (from logits: exp(log p - log q),
# more accurate than dividing two exps), so they hand it to the rule as p(x) = r over q(x) = 1:
# r / 1.0 is exactly r, and the comparison is the one `rules` defines.
def accept_graded(u, ratio):
    """rules.graded_accepts: accept while u <= min(1, p(x) / q(x)) (u in [0, 1]); compare in float64."""
    return graded_accepts(u, ratio, 1.0)


def accept_sampled(u, ratio):
    """rules.token_accepts: strict <, so with u ~ U[0, 1) P(accept) is exactly min(1, p/q) and p(x) = 0 never passes."""
    return token_accepts(u, ratio, 1.0)


def residual_weights(p_rows, q_rows, dtype=None):
    """Convention (residual.py): max(0, p - q) per row [R, V], or p where that has no mass. Unnormalised."""
    excess = np.subtract(p_rows, q_rows, dtype=dtype)              # [R, V]; float32 widened exactly first
    np.maximum(excess, 0.0, out=excess)
    empty = ~(excess.max(axis=1, initial=0.0) > 0.0)               # [R]: no mass (p == q up to rounding)
    if empty.any():
        excess[empty] = p_rows[empty]
    return excess


_DRAW_BLOCK = 2048  # entries per block of the two-level inverse CDF


def draw_rows(weights, uniforms):
    """Convention (sampling.py): one index per row of non-negative weights [R, V] by inverse CDF, uniforms [R] in
    [0, 1).

    The index is the first j whose running sum exceeds u * total, sums accumulated in float64
    whatever the weights' dtype (float32 partial sums over 128000 entries would drift by ~1e-3).
    Rows longer than one block take two levels: block sums locate the block, and only that
    block is accumulated entry by entry (a full running sum costs ~3 ns per entry, ~25x a sum).
    """
    rows, vocab = weights.shape
    if vocab <= _DRAW_BLOCK:
        cdf = np.cumsum(weights, axis=1, dtype=np.float64)         # [R, V]
        t = uniforms * cdf[:, -1]                                  # [R]
        # First j with cdf_j > t. fl(u T) < T for every float u < 1, so j < V exists, and
        # cdf_j > t >= cdf_{j-1} means weights[j] > 0: a zero-mass token is never drawn.
        return (cdf <= t[:, None]).sum(axis=1)
    full, tail = divmod(vocab, _DRAW_BLOCK)
    sums = np.empty((rows, full + (tail > 0)))                     # [R, n_blocks] float64
    sums[:, :full] = weights[:, :full * _DRAW_BLOCK].reshape(rows, full, _DRAW_BLOCK).sum(axis=2, dtype=np.float64)
    if tail:
        sums[:, full] = weights[:, full * _DRAW_BLOCK:].sum(axis=1, dtype=np.float64)
    ends = np.cumsum(sums, axis=1)                                 # [R, n_blocks]
    t = uniforms * ends[:, -1]                                     # [R]
    block = (ends <= t[:, None]).sum(axis=1)                       # [R]: first block ending above t, as above
    idx = block[:, None] * _DRAW_BLOCK + np.arange(_DRAW_BLOCK)    # [R, L]
    at = np.arange(rows)[:, None]
    inside = weights[at, np.minimum(idx, vocab - 1)].astype(np.float64) * (idx < vocab)   # [R, L]: block's weights
    before = np.where(block > 0, ends[at[:, 0], block - 1], 0.0)   # [R]: the sum of the blocks before
    cdf = np.cumsum(inside, axis=1) + before[:, None]              # [R, L]: the running sum inside the block
    j = (cdf <= t[:, None]).sum(axis=1)                            # [R]
    # Subtle: the block's own running sum may end a few ulps below its block sum, leaving t past
    # it: take the block's last token with mass (the block has mass: ends rose across it).
    last = _DRAW_BLOCK - 1 - (inside[:, ::-1] > 0).argmax(axis=1)  # [R]
    return block * _DRAW_BLOCK + np.minimum(j, last)


# Subtle: the plain rule takes the argmax of (p - q in float64) / mass, and rounding can
# merge two excesses a few ulps apart into a tie (won by the lower index): float32
# subtraction can, and so can the division, depending on the exact float sum `mass`.
# Where no other entry comes within a few ulps of a row's top, argmax(excess) provably
# gives the plain rule's token; the rare rows where one does are replayed exactly.
_NEAR_TIE = 8 * np.finfo(np.float64).eps


def _plain_argmax(p_row, q_row):
    """The plain rule's residual argmax for one row [V], exactly (see _NEAR_TIE)."""
    excess = residual_weights(p_row[None], q_row[None], np.float64)[0]   # [V]
    top = excess.max()
    if (excess >= top * (1 - _NEAR_TIE)).sum() > (excess == top).sum():   # a rival a few ulps below the top
        return argmax(residual_distribution(p_row.tolist(), q_row.tolist()))  # replay the plain arithmetic
    return int(excess.argmax())                                    # np.argmax: the first of exact ties


def residual_argmax(p_rows, q_rows):
    """Convention (verify.py, residual.py): argmax normalize(max(0, p - q)) per row [R, V] -> [R], as the plain rule.

    One pass in the input precision finds each row's top; only rows where another entry comes
    within a few ulps of it (exact ties included) or with no mass are redone exactly, one by one.
    """
    work = np.result_type(p_rows, q_rows)                          # float32 rows: half the memory traffic
    excess = np.subtract(p_rows, q_rows, dtype=work)               # [R, V]
    np.maximum(excess, 0.0, out=excess)
    best = excess.argmax(axis=1)                                   # [R]
    top = np.take_along_axis(excess, best[:, None], axis=1)        # [R, 1]
    close = np.count_nonzero(excess >= top * (1 - 8 * np.finfo(work).eps), axis=1) > 1  # [R]
    for r in np.flatnonzero(close | (top[:, 0] <= 0.0)):           # rare: ties, near-ties, no mass
        best[r] = _plain_argmax(p_rows[r], q_rows[r])
    return best
