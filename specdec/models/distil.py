"""Distilling the draft from the target (DistillSpec, Zhou et al. 2023): soft counts, and their storage.

A counted n-gram learns c(h, w) / c(h) from the text. A distilled one learns, for
each context h, the AVERAGE of the target's own next-token row p(. | full window)
over the c(h) positions where h occurs, so the draft q imitates p, not the text:
the acceptance rate alpha = E[sum min(p, q)] rises (greedy 0.85 -> 0.97 here).
`NGramModel.distil` mixes these shares into the Witten-Bell backoff.

    >>> keys, lengths, shares = soft_counts([1, 1], [[0.0, 0.5, 0.5], [0.0, 1.0, 0.0]], 3, order=2)
    >>> keys.tolist(), lengths.tolist(), shares.tolist()   # context 0 -> row 0; context 1 -> row 1
    ([1, 2, 4], [1, 1, 1], [0.5, 0.5, 1.0])
"""

import numpy as np


def soft_counts(ids, target_rows, vocab_size, order, pad=0, min_share=0.02):
    """(keys h * V + w, lengths k, shares pbar(w | h)) for every context length k = 1..order - 1.

    pbar(w | h) averages target_rows[t][w] over the c(h) positions t whose last
    k ids are h (left-padded like `fit`); shares below min_share are left out.
    """
    V, N, rows = int(vocab_size), len(ids), np.asarray(target_rows, dtype=np.float64)
    if rows.shape != (N, V):
        raise ValueError(f"target_rows has shape {rows.shape}, expected ({N}, {V}): one row per id")
    if order < 2:
        raise ValueError(f"order is {order}: distilling needs contexts, so order >= 2")
    x = np.concatenate([np.full(order - 1, pad, dtype=np.int64), np.asarray(ids, dtype=np.int64)])
    out = ([], [], [])
    for k in range(1, order):
        ctx = np.zeros(N, dtype=np.int64)
        for j in range(order - 1 - k, order - 1):  # the k ids before position t, oldest first
            ctx = ctx * V + x[j: j + N]
        by_context = np.argsort(ctx, kind="stable")
        sorted_ctx = ctx[by_context]
        starts = np.flatnonzero(np.r_[True, sorted_ctx[1:] != sorted_ctx[:-1]])
        share = np.add.reduceat(rows[by_context], starts, axis=0)   # [contexts, V]: one sum per context
        share /= np.diff(np.r_[starts, N])[:, None]               # / c(h): the average row
        r, w = np.nonzero(share >= min_share)
        for part, new in zip(out, (sorted_ctx[starts][r] * V + w, np.full(len(r), k, np.int8), share[r, w])):
            part.append(new)
    return tuple(np.concatenate(part) for part in out)


def pack_soft(soft, V):
    """Compact arrays for an .npz: shares floored to 1/255 (the leftover joins the backoff), keys split."""
    keys, lengths, share = (np.asarray(a) for a in soft)
    return {"soft_lengths": lengths.astype(np.int8), "soft_next": (keys % V).astype(np.uint8),
            "soft_context_step": np.diff(keys // V, prepend=0),   # sorted within a length: small steps compress
            "soft_share": np.floor(np.asarray(share) * 255).astype(np.uint8)}


def unpack_soft(arrays, V):
    """The (keys, lengths, shares) that `pack_soft` stored."""
    keys = np.cumsum(arrays["soft_context_step"]) * V + arrays["soft_next"]
    return keys, arrays["soft_lengths"], arrays["soft_share"] / 255.0
