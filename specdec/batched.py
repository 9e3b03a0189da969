"""The rule over a batch with NumPy: B drafts of K tokens verified at once.

`verify_batch` is the graded `verify_speculative_tokens` on every row (same rule, ties and
fallbacks, float32 or float64); `sample_batch` is the lossless `speculative_sample` on every
row. Notation as everywhere: target p, draft q, K drafted tokens (gamma in the papers).

    draft_tokens [B, K]   draft_probs q [B, K, V]   target_probs p [B, K or K + 1, V]
    random_samples u [B, K] -> {"acceptance_count": int64[B], "bonus_token": int64[B]}

bonus_token is -1 where there is none; row b accepted draft_tokens[b, :acceptance_count[b]].

    >>> import numpy as np
    >>> out = verify_batch(np.array([[2, 1], [0, 0]]),
    ...     np.array([[[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]], [[0.8, 0.2, 0.0], [0.5, 0.5, 0.0]]]),
    ...     np.array([[[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]],    # row 0: the seed's example 1
    ...               [[0.2, 0.8, 0.0], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]]),   # row 1: 0.5 > 0.2 / 0.8
    ...     np.array([[0.5, 0.4], [0.5, 0.5]]))
    >>> out["acceptance_count"].tolist(), out["bonus_token"].tolist()
    ([2, 0], [0, 1])

Why it is cheap: only p(x) and q(x) at the drafted tokens decide acceptance, and only the
FIRST rejected position of a row needs a residual (verification stops there): O(B (K + V))
work, where max(0, p - q) at all B x K positions (as vLLM v0 does) costs O(B K V).
Validation (validate=True, the default) still reads every row once, O(B K V); validate=False
skips it for trusted inputs (the benchmark times both), and then bad input gives garbage.
"""

import numpy as np

from ._checks import SUM_TOLERANCE
from .residual import argmax, residual_distribution

# Subtle: the plain rule takes the argmax of (p - q in float64) / mass, and rounding can
# merge two excesses a few ulps apart into a tie (won by the lower index): float32
# subtraction can, and so can the division, depending on the exact float sum `mass`.
# Where no other entry comes within a few ulps of a row's top, argmax(excess) provably
# gives the plain rule's token; the rare rows where one does are redone exactly.
_NEAR_TIE = 8 * np.finfo(np.float64).eps


def _as_array(value, name, ndim, layout, integer=False):
    """`value` as an ndarray of `ndim` dimensions and a real (or integer) dtype, else a clear error."""
    try:
        arr = np.asarray(value)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"{name} is ragged: it must be one {layout} array ({err})") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have shape {layout}, got shape {arr.shape}")
    if integer and arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # np.asarray([[]]) is float64; an empty draft is fine
    if arr.dtype.kind not in ("iu" if integer else "iuf"):
        what = "integer token ids" if integer else "real numbers"
        raise TypeError(f"{name} must hold {what}, got dtype {arr.dtype}")
    return arr if integer or arr.dtype.kind == "f" else arr.astype(np.float64)


def _first_bad(mask):
    """(b, i) of the first True in a [B, K] mask, in row-major order."""
    return tuple(int(v) for v in np.argwhere(mask)[0])


def _check_rows(probs, name):
    """Every row of probs [B, R, V] is finite, >= 0 and sums to 1 within SUM_TOLERANCE."""
    if probs.size == 0:
        return
    low = probs.min(axis=-1)                        # [B, R]; NaN propagates
    # float32 rows are summed in float32 (pairwise: off by ~1e-6 at V = 32000, far inside the
    # tolerance); widening them to float64 on the fly would triple the cost of this pass.
    total = probs.sum(axis=-1, dtype=np.promote_types(probs.dtype, np.float32))  # [B, R]
    bad = ~(low >= 0) | ~(np.abs(total - 1.0) <= SUM_TOLERANCE)  # [B, R]
    if not bad.any():
        return
    b, i = _first_bad(bad)
    row = probs[b, i]                               # [V]: only the offending row is inspected
    for j, v in enumerate(row.tolist()):
        if not np.isfinite(v):
            raise ValueError(f"{name}[{b}, {i}, {j}] is {v}: probabilities must be finite")
        if v < 0:
            raise ValueError(f"{name}[{b}, {i}, {j}] is {v}, a negative probability (logits passed by mistake?)")
    raise ValueError(f"{name}[{b}, {i}] sums to {total[b, i]:.6g}, not 1: pass probabilities "
                     "(softmax of the logits), not logits or weights")


def _prepare(draft_tokens, draft_probs, target_probs, validate):
    """Arrays (tokens [B, K], q [B, K, V], p [B, K or more, V]) and the gathered p(x), q(x) in float64."""
    tokens = _as_array(draft_tokens, "draft_tokens", 2, "[B, K]", integer=True)
    q = _as_array(draft_probs, "draft_probs", 3, "[B, K, V]")
    p = _as_array(target_probs, "target_probs", 3, "[B, K or K + 1, V]")
    (b, k), v = tokens.shape, q.shape[2]
    if q.shape[:2] != (b, k):
        raise ValueError(f"draft_probs has shape {q.shape} but draft_tokens has shape {tokens.shape}: "
                         f"expected [B, K, V] = [{b}, {k}, V], one draft row per drafted token")
    if p.shape[0] != b or p.shape[1] < k or p.shape[2] != v:
        raise ValueError(f"target_probs has shape {p.shape} but draft_probs has shape {q.shape}: expected "
                         f"[{b}, {k} or {k + 1}, {v}], the target scores every drafted position (+1 for the bonus)")
    if v == 0:
        raise ValueError("draft_probs has V = 0 entries per row: a distribution needs at least one token")
    if validate:
        _check_rows(p, "target_probs")
        _check_rows(q, "draft_probs")
        outside = (tokens < 0) | (tokens >= v)                     # [B, K]
        if outside.any():
            i, j = _first_bad(outside)
            raise ValueError(f"draft_tokens[{i}, {j}] is {tokens[i, j]}, outside the vocabulary [0, {v})")
    idx = tokens[..., None]                                        # [B, K, 1]
    px = np.take_along_axis(p[:, :k], idx, axis=2)[..., 0].astype(np.float64)  # [B, K]
    qx = np.take_along_axis(q, idx, axis=2)[..., 0].astype(np.float64)         # [B, K]
    if validate and (qx == 0).any():
        i, j = _first_bad(qx == 0)
        raise ValueError(f"draft_probs[{i}, {j}, {tokens[i, j]}] is 0 but draft_tokens[{i}, {j}] is "
                         f"{tokens[i, j]}: the draft cannot have proposed a token it gives probability 0")
    return tokens, q, p, px, qx


def _first_rejection(accept):
    """From accept [B, K]: (acceptance_count [B], rejected [B]); the count is K where nothing was rejected."""
    reject = ~accept                                               # [B, K]
    rejected = reject.any(axis=1)                                  # [B]
    first = reject.argmax(axis=1) if reject.shape[1] else 0        # argmax of bools: first True, 0 if none
    return np.where(rejected, first, reject.shape[1]).astype(np.int64), rejected


def _excess(p_rows, q_rows, dtype=np.float64):
    """max(0, p - q) for R rows [R, V]; in float64 it is exactly what the plain rule computes."""
    excess = np.subtract(p_rows, q_rows, dtype=dtype)              # [R, V]; float32 widened exactly first
    return np.maximum(excess, 0.0, out=excess)


def _plain_argmax(p_row, q_row):
    """The plain rule's residual argmax for one row [V], exactly (see _NEAR_TIE)."""
    excess = _excess(p_row, q_row)                                 # [V]
    top = excess.max()
    if top <= 0.0:
        return int(p_row.argmax())                                 # no mass: fall back to p (residual.py)
    if (excess >= top * (1 - _NEAR_TIE)).sum() > (excess == top).sum():   # a rival a few ulps below the top
        return argmax(residual_distribution(p_row.tolist(), q_row.tolist()))  # replay the plain arithmetic
    return int(excess.argmax())                                    # first of the exact ties


def _residual_argmax(p_rows, q_rows):
    """argmax normalize(max(0, p - q)) per row [R, V] -> [R], ties to the lower index; p where no mass.

    One pass in the input precision finds each row's top; only rows where another entry comes
    within a few ulps of it (exact ties included) are redone exactly, one by one.
    """
    work = np.result_type(p_rows, q_rows)                          # float32 rows: half the memory traffic
    excess = _excess(p_rows, q_rows, work)                         # [R, V]
    best = excess.argmax(axis=1)                                   # [R]
    top = np.take_along_axis(excess, best[:, None], axis=1)        # [R, 1]
    close = np.count_nonzero(excess >= top * (1 - 8 * np.finfo(work).eps), axis=1) > 1  # [R]
    for r in np.flatnonzero(close | (top[:, 0] <= 0.0)):           # rare: ties, near-ties, no mass
        best[r] = _plain_argmax(p_rows[r], q_rows[r])
    return best


def verify_batch(draft_tokens, draft_probs, target_probs, random_samples, *, validate=True):
    """The graded rule on every row: row b equals verify_speculative_tokens on row b.

    Accept while u <= min(1, p(x) / q(x)) (compared in float64, as the plain rule does);
    at the first rejection bonus = argmax of the residual (argmax p if it has no mass);
    if all K are accepted and target_probs has row K, bonus = argmax p_K; else -1.
    Rows of target_probs past K + 1 are validated but never used, as in the plain rule.
    validate=False skips the O(B K V) input checks (see the module docstring).
    """
    tokens, q, p, px, qx = _prepare(draft_tokens, draft_probs, target_probs, validate)
    u = _as_array(random_samples, "random_samples", 2, "[B, K]")
    if u.shape != tokens.shape:
        raise ValueError(f"random_samples has shape {u.shape} but draft_tokens has shape {tokens.shape}: "
                         "one uniform sample per drafted token")
    outside = ~((u >= 0) & (u <= 1)) if validate else np.zeros(u.shape, bool)  # [B, K]; NaN too
    if outside.any():
        raise ValueError("random_samples[{}, {}] is {}, outside [0, 1]".format(*_first_bad(outside), u[outside][0]))
    with np.errstate(over="ignore", divide="ignore"):             # p / tiny q is inf, as in Python
        accept = u.astype(np.float64) <= np.minimum(1.0, px / qx)  # [B, K]
    count, rejected = _first_rejection(accept)
    bonus = np.full(len(count), -1, np.int64)                      # [B]
    rows = np.flatnonzero(rejected)                                # [R]
    bonus[rows] = _residual_argmax(p[rows, count[rows]], q[rows, count[rows]])  # one [R, V] slice each
    if p.shape[1] > tokens.shape[1]:                               # the target scored a row K
        done = np.flatnonzero(~rejected)
        bonus[done] = p[done, tokens.shape[1]].argmax(axis=1)
    return {"acceptance_count": count, "bonus_token": bonus}


def _sample_rows(weights, rng):
    """One index per row of non-negative weights [R, V] (each row with mass), by inverse CDF."""
    cdf = np.cumsum(weights, axis=1)                               # [R, V]
    t = rng.random(len(weights)) * cdf[:, -1]                      # [R], one uniform per row
    # First j with cdf_j > t. fl(u T) < T for every float u < 1, so j < V exists, and
    # cdf_j > t >= cdf_{j-1} means weights[j] > 0: a zero-mass token is never drawn.
    return (cdf <= t[:, None]).sum(axis=1)


def sample_batch(draft_tokens, draft_probs, target_probs, rng, *, validate=True):
    """The lossless sampler on every row, returning verify_batch's dict.

    Accept while u < min(1, p(x) / q(x)) with u ~ U[0, 1) (strict <, as `sampling.py`);
    the correction is SAMPLED from the residual (p if it has no mass) and the bonus from
    p_K. rng: a numpy.random.Generator or an int seed; the same seed gives the same output.
    When draft_tokens[b, i] ~ draft_probs[b, i], every emitted token is distributed as p.
    """
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        rng = np.random.default_rng(rng)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator or an int seed, got {type(rng).__name__}")
    tokens, q, p, px, qx = _prepare(draft_tokens, draft_probs, target_probs, validate)
    u = rng.random(tokens.shape)                                   # [B, K]
    with np.errstate(over="ignore", divide="ignore"):
        count, rejected = _first_rejection(u < np.minimum(1.0, px / qx))
    bonus = np.full(len(count), -1, np.int64)                      # [B]
    rows = np.flatnonzero(rejected)                                # [R]
    p_rows = p[rows, count[rows]]                                  # [R, V]
    weights = _excess(p_rows, q[rows, count[rows]])                # [R, V]
    empty = weights.sum(axis=1) <= 0.0                             # no mass: fall back to p
    weights[empty] = p_rows[empty]
    bonus[rows] = _sample_rows(weights, rng)
    if p.shape[1] > tokens.shape[1]:                               # the target scored a row K
        done = np.flatnonzero(~rejected)
        bonus[done] = _sample_rows(p[done, tokens.shape[1]].astype(np.float64), rng)
    return {"acceptance_count": count, "bonus_token": bonus}
