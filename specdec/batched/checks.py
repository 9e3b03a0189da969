"""Input validation for the batched verifiers (NumPy); the plain-Python twin is `_checks.py`.

Same promise as `_checks.py`: bad input raises an error that names the argument and the
position, in row-major order (the first bad row of the batch is the one reported):

    >>> check_prob_rows(np.array([[[0.5, 0.5], [0.7, 0.7]]]), "draft_probs", np.ones((1, 2), bool))
    Traceback (most recent call last):
    ...
    ValueError: draft_probs[0, 1] sums to 1.4, not 1: pass probabilities (softmax of the logits), not logits or weights

Rows are checked in one vectorised pass; only an offending row is scanned entry by entry.
`mask` [B, R] says which rows are real: padding after a ragged row's last draft is never read.
"""

import numbers

import numpy as np

from .._checks import SUM_TOLERANCE, shown, too_large

PLACEHOLDER = -1  # a draft id meaning "no draft here" (vLLM's PLACEHOLDER_TOKEN_ID); only at the end of a row


def as_array(value, name, ndim, layout, integer=False):
    """`value` as an ndarray of `ndim` dimensions and a real (or integer) dtype, else a clear error."""
    try:
        arr = np.asarray(value)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"{name} is ragged: it must be one {layout} array ({err})") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have shape {layout}, got shape {arr.shape}")
    if arr.dtype.kind == "O":
        check_huge_ints(arr, name, integer)
    if integer and arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # np.asarray([[]]) is float64; an empty draft is fine
    if arr.dtype.kind not in ("iu" if integer else "iuf"):
        what = "integer token ids" if integer else "real numbers"
        raise TypeError(f"{name} must hold {what}, got dtype {arr.dtype}")
    return arr if integer or arr.dtype.kind == "f" else arr.astype(np.float64)


def check_huge_ints(arr, name, integer=False):
    """An object array holding a Python int beyond NumPy's dtypes (10 ** 400): a ValueError naming its position."""
    for idx, v in np.ndenumerate(arr):
        if isinstance(v, numbers.Integral) and not isinstance(v, bool) and abs(v) >= 2 ** 63:
            where = f"{name}[{', '.join(map(str, idx))}]" if idx else name
            if integer:
                raise ValueError(f"{where} is {shown(v)}, too large for a token id")
            try:
                float(v)
            except OverflowError:
                raise too_large(v, where) from None


def first_bad(mask):
    """(b, i) of the first True in a [B, K] mask, in row-major order."""
    return tuple(int(v) for v in np.argwhere(mask)[0])


def check_prob_rows(probs, name, mask):
    """Every real row of probs [B, R, V] is finite, >= 0 and sums to 1 within SUM_TOLERANCE."""
    if probs.size == 0:
        return
    low = probs.min(axis=-1)                        # [B, R]; NaN propagates
    # float32 rows are summed in float32 (pairwise: off by ~1e-6 at V = 32000, far inside the
    # tolerance); widening them to float64 on the fly would triple the cost of this pass.
    total = probs.sum(axis=-1, dtype=np.promote_types(probs.dtype, np.float32))  # [B, R]
    bad = (~(low >= 0) | ~(np.abs(total - 1.0) <= SUM_TOLERANCE)) & mask          # [B, R]
    if not bad.any():
        return
    b, i = first_bad(bad)
    for j, v in enumerate(probs[b, i].tolist()):    # only the offending row is inspected
        if not np.isfinite(v):
            raise ValueError(f"{name}[{b}, {i}, {j}] is {v}: probabilities must be finite")
        if v < 0:
            raise ValueError(f"{name}[{b}, {i}, {j}] is {v}, a negative probability (logits passed by mistake?)")
    raise ValueError(f"{name}[{b}, {i}] sums to {total[b, i]:.6g}, not 1: pass probabilities "
                     "(softmax of the logits), not logits or weights")


def check_logit_rows(logits, name, mask):
    """Every real row of logits [B, R, V] is finite or -inf, with at least one finite entry.

    One max per row finds all three faults: NaN propagates through max, +inf is the max,
    and a row of -inf only has max -inf.
    """
    if logits.size == 0:
        return
    top = logits.max(axis=-1)                       # [B, R]
    bad = ~np.isfinite(top) & mask                  # [B, R]
    if not bad.any():
        return
    b, i = first_bad(bad)
    for j, v in enumerate(logits[b, i].tolist()):
        if np.isnan(v) or v == np.inf:
            raise ValueError(f"{name}[{b}, {i}, {j}] is {v}: logits must be finite or -inf")
    raise ValueError(f"{name}[{b}, {i}] is -inf everywhere: no token can be chosen")


def check_tokens(tokens, vocab):
    """Drafted ids in [0, V), or the placeholder -1 at the end of a row; return k_row [B], the real drafts per row."""
    placeholder = tokens == PLACEHOLDER                                      # [B, K]
    after = placeholder.cumsum(axis=1) > 0                                  # [B, K]: at or after a row's first -1
    middle = after & ~placeholder                                            # a real id after a placeholder
    if middle.any():
        b, i = first_bad(middle)
        start = int(np.argmax(placeholder[b]))
        raise ValueError(f"draft_tokens[{b}, {i}] is {tokens[b, i]} after the placeholder -1 at draft_tokens[{b}, "
                         f"{start}]: -1 means 'no draft here' and may only fill the end of a row")
    outside = ((tokens < 0) | (tokens >= vocab)) & ~placeholder              # [B, K]
    if outside.any():
        b, i = first_bad(outside)
        raise ValueError(f"draft_tokens[{b}, {i}] is {tokens[b, i]}, outside the vocabulary [0, {vocab}) "
                         "(-1 is the only placeholder, allowed at the end of a row)")
    return (~after).sum(axis=1).astype(np.int64)                             # [B]


def check_uniforms(u, shape, real):
    """random_samples [B, K] in [0, 1] at the real draft positions; return them as float64."""
    u = as_array(u, "random_samples", 2, "[B, K]")
    if u.shape != shape:
        raise ValueError(f"random_samples has shape {u.shape} but draft_tokens has shape {shape}: "
                         "one uniform sample per drafted token")
    outside = ~((u >= 0) & (u <= 1)) & real                                  # [B, K]; NaN too
    if outside.any():
        b, i = first_bad(outside)
        raise ValueError(f"random_samples[{b}, {i}] is {u[b, i]}, outside [0, 1]")
    return u.astype(np.float64)


def check_temperature(temperature, batch):
    """A finite temperature >= 0, one for the batch or one per row; return it as float64 [B]."""
    if type(temperature) is float and 0 <= temperature < np.inf:           # the common case, fast
        return np.full(batch, temperature)
    t = np.asarray(temperature)
    if t.dtype.kind == "O":
        check_huge_ints(t, "temperature")
    if t.dtype.kind not in "iuf" or t.shape not in ((), (batch,)):           # bool, str, wrong shape
        raise TypeError(f"temperature must be a number or one number per row (shape ({batch},)), "
                        f"got {type(temperature).__name__} of shape {t.shape} and dtype {t.dtype}")
    scalar = t.ndim == 0
    t = np.broadcast_to(t, (batch,)).astype(np.float64)
    bad = ~((t >= 0) & (t < np.inf))                                         # NaN too
    if bad.any():
        b = int(np.argmax(bad))
        raise ValueError(f"{'temperature' if scalar else f'temperature[{b}]'} is {t[b]}: "
                         "a temperature must be finite and >= 0 (0 means greedy)")
    return t


def check_seeds(seeds, batch):
    """Per-row seeds: non-negative integers [B], or (seed, step) pairs [B, 2]; return them as uint64."""
    arr = np.asarray(seeds)
    if arr.dtype.kind not in "iu" or arr.shape not in ((batch,), (batch, 2)):
        raise TypeError(f"per-row seeds must be integers of shape ({batch},) or ({batch}, 2) (seed, step), "
                        f"got dtype {arr.dtype} and shape {arr.shape}")
    pairs = arr if arr.ndim == 2 else arr[:, None]                           # [B, 1 or 2]
    if (pairs < 0).any():
        b, c = first_bad(pairs < 0)
        where = f"rng[{b}, {c}]" if arr.ndim == 2 else f"rng[{b}]"
        raise ValueError(f"{where} is {pairs[b, c]}: seeds must be >= 0")
    return arr.astype(np.uint64)
