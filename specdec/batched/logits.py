"""The chain rule from logits: one logsumexp pass per row, probabilities only where the rule looks (NumPy).

Engines hold logits z, not probabilities, and p = softmax(z / T). Writing softmax for every
row of a [B, K + 1, V] batch before verifying (as a softmax-then-verify pipeline does) costs
a full written row per position; the rule needs far less:

- the acceptance test reads p(x) and q(x) at the drafted token x only, and
      log p(x) = (z[x] - max z) / T - log sum_j exp((z[j] - max z) / T),
  one pass over the row into a scratch block (max, then exp and sum), nothing written back;
- verification stops at a row's first rejection: positions are visited in order and only
  rows still accepting go on (a loop over K, vectorised over the rows; with few rows,
  several positions are taken per step, as many as fill one block, to save Python overhead);
- a full probability row is formed only where the rule draws from one: the residual at the
  first rejection (from the exp blocks still in cache) and the bonus row.
Blocks hold about BLOCK entries, so a row is read from memory once and reused from cache.

Temperature 0 is greedy decoding: accept while the drafted token is the target's argmax
(ties to the lower index), correct with that argmax, bonus argmax z_K; draft logits and
uniforms are not consulted (vLLM does the same). It is the limit T -> 0 of the rule
(softmax(z / T) tends to one-hot at the argmax, as `specdec.softmax(z, 0)` returns), with
the graded rule's one exception made explicit: u = 0 would accept p(x) = 0 under <=.

    >>> from specdec.batched.rules import accept_graded
    >>> z_q = np.log([[[0.8, 0.2]]]); z_p = np.log([[[0.2, 0.8], [0.5, 0.5]]])    # the verify.py doctest
    >>> chain_from_logits(np.array([[0]]), np.array([1]), z_q, z_p, np.ones(1), np.array([[0.5]]),
    ...                   accept_graded, draw=None)     # 0.5 > 0.2 / 0.8: rejected, residual argmax 1
    (array([0]), array([1]))
"""

import math
import threading

import numpy as np

from .rules import draw_rows, residual_weights

BLOCK = 1 << 18   # entries per scratch block (1 MB of float32): a block is reused from cache between its passes


def _blocks(n, entries):
    """Slices cutting n items of `entries` entries each into blocks of about BLOCK entries (at least one item)."""
    step = max(1, BLOCK // entries)
    return [slice(s, s + step) for s in range(0, n, step)]


_scratch = threading.local()


def _buffer(slot, shape, dtype):
    """A scratch array kept per thread and slot: fresh memory each call costs page faults (~2x on a cold call)."""
    size = math.prod(shape)
    buf = getattr(_scratch, slot, None)
    if buf is None or buf.size < size or buf.dtype != dtype:
        buf = np.empty(max(size, BLOCK), dtype)
        setattr(_scratch, slot, buf)
    return buf[:size].reshape(shape)


def exp_block(z, inv_t, slot):
    """For logit rows z [..., V]: (e, top, log_sum) with e = exp((z - top) * inv_t), top = max z and
    log_sum = log sum(e), both [...]. inv_t: 1 / temperature, broadcastable to [...], or None for 1.

    One read of z (the max); the subtraction writes a scratch block (`slot`, reused by the next
    call: use e before then) that exp and the sum reuse from cache. z itself is never written.
    """
    top = z.max(axis=-1)                                            # [...]
    e = _buffer(slot, z.shape, np.promote_types(z.dtype, np.float32))   # float16 logits: computed in float32
    np.subtract(z, top[..., None], out=e)                           # -inf stays -inf: exp gives 0
    if inv_t is not None:
        np.multiply(e, np.asarray(inv_t, e.dtype)[..., None], out=e)
    np.exp(e, out=e)
    return e, top, np.log(e.sum(axis=-1).astype(np.float64))        # sums >= 1: the top entry is exp(0)


def _rows(z, blk, pos):
    """z[blk, pos] as a view when the row ids blk are consecutive (no gathered copy), else as a gathered copy."""
    if blk[-1] - blk[0] == len(blk) - 1:
        return z[blk[0]:blk[-1] + 1, pos]
    return z[blk, pos]


def argmax_rows(z, rows, pos):
    """argmax z[b, pos] for b in rows [R] (pos: one position, or one per row), ties to the lower index."""
    pos = np.broadcast_to(pos, rows.shape)
    out = np.empty(len(rows), np.int64)
    for sl in _blocks(len(rows), z.shape[2]):
        out[sl] = z[rows[sl], pos[sl]].argmax(axis=1)               # np.argmax: the first of equal maxima
    return out


def _greedy(tokens, k_row, zp, rows, has_bonus, count, bonus):
    """Temperature 0: accept while x_i == argmax z_i; correction argmax z_i; bonus argmax z at row k_row."""
    for i in range(tokens.shape[1] + 1):
        ends = rows[k_row[rows] == i]                               # every draft accepted: the bonus row
        if has_bonus and ends.size:
            bonus[ends] = argmax_rows(zp, ends, i)
        rows = rows[k_row[rows] > i]
        if not rows.size:
            return
        best = argmax_rows(zp, rows, i)                             # [R]
        miss = tokens[rows, i] != best
        count[rows[miss]], bonus[rows[miss]] = i, best[miss]
        rows = rows[~miss]


def _verify_positions(blk, i, g, tokens, real, zq, zp, inv_t, u, accept, draw, count, bonus):
    """Positions i .. i + g - 1 of the rows blk [c]: record first rejections; return the rows with none."""
    scale = None if inv_t is None else inv_t[blk][:, None]          # [c, 1]
    ep, top_p, log_sp = exp_block(_rows(zp, blk, slice(i, i + g)), scale, "p")   # [c, g, V], [c, g], [c, g]
    eq, top_q, log_sq = exp_block(_rows(zq, blk, slice(i, i + g)), scale, "q")
    at = blk[:, None], i + np.arange(g)[None, :], np.maximum(tokens[blk, i:i + g], 0)   # placeholders read id 0
    log_px = zp[at].astype(np.float64) - top_p                      # [c, g]: z(x) - top, only the drafted entries
    log_qx = zq[at].astype(np.float64) - top_q
    if scale is not None:
        log_px, log_qx = log_px * scale, log_qx * scale
    with np.errstate(over="ignore", invalid="ignore"):             # p(x) / tiny q(x) is inf, as in Python
        ok = accept(u[blk, i:i + g], np.exp((log_px - log_sp) - (log_qx - log_sq)))   # [c, g]
    reject = ~ok & real[blk, i:i + g]                               # placeholders never reject
    hit = reject.any(axis=1)                                        # [c]
    if hit.any():                                                   # first rejections: the residual, from cache
        at = np.flatnonzero(hit), reject.argmax(axis=1)[hit]        # [r], [r]: block row, position offset
        # max(0, p - q) = max(0, e_p - e_q * s_p / s_q) / s_p: the scale 1 / s_p changes neither argmax nor draw.
        weights = residual_weights(ep[at], eq[at] * np.exp(log_sp[at] - log_sq[at])[:, None].astype(eq.dtype))
        rows = blk[hit]
        count[rows] = i + at[1]
        # Convention (residual.py): np.argmax takes the first of equal maxima, the lower index.
        bonus[rows] = weights.argmax(axis=1) if draw is None else draw_rows(weights, draw(rows))
    return blk[~hit]


def chain_from_logits(tokens, k_row, zq, zp, temperature, u, accept, draw):
    """Verify row b's first k_row[b] drafts from logits -> (acceptance_count [B], bonus_token [B], -1 = none).

    zq [B, K, V], zp [B, K or more, V] logits (validated by the caller); temperature [B] (0: greedy);
    u [B, K] float64 acceptance uniforms; accept(u, ratio) the rule; draw None for the argmax
    (graded) rule, else draw(rows) -> one uniform per row in [0, 1) for the sampled correction/bonus.
    """
    (batch, k), vocab = tokens.shape, zp.shape[2]
    count, bonus = k_row.copy(), np.full(batch, -1, np.int64)
    greedy = temperature == 0
    if greedy.any():
        _greedy(tokens, k_row, zp, np.flatnonzero(greedy), zp.shape[1] > k, count, bonus)
    inv_t = 1.0 / np.where(greedy, 1.0, temperature)                # [B]
    inv_t = None if (inv_t == 1).all() else inv_t
    real = np.arange(k)[None, :] < k_row[:, None]                   # [B, K]
    rows, done, i = np.flatnonzero(~greedy & (k_row > 0)), [np.flatnonzero(~greedy & (k_row == 0))], 0
    while rows.size:                                                # rows still accepting at position i
        g = min(k - i, max(1, BLOCK // (vocab * len(rows))))        # positions per step: one block's worth
        rows = np.concatenate([np.zeros(0, np.int64)] + [
            _verify_positions(rows[sl], i, g, tokens, real, zq, zp, inv_t, u, accept, draw, count, bonus)
            for sl in _blocks(len(rows), g * vocab)])
        i += g
        done.append(rows[k_row[rows] <= i])                         # every real draft accepted
        rows = rows[k_row[rows] > i]
    done = np.concatenate(done)
    if zp.shape[1] > k and done.size:                               # the bonus row k_b of each finished row
        if draw is None:                                            # graded: argmax p = argmax z, no exp needed
            bonus[done] = argmax_rows(zp, done, k_row[done])
        else:
            for sl in _blocks(len(done), vocab):                    # sampled: unnormalised p, the draw needs no sum
                blk = done[sl]
                scale = None if inv_t is None else inv_t[blk]
                bonus[blk] = draw_rows(exp_block(zp[blk, k_row[blk]], scale, "p")[0], draw(blk))   # [c, V] gathered
    return count, bonus
