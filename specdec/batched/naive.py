"""The naive batched verifier: the baseline `verify_batch` is measured against (NumPy).

The direct vectorisation of the graded rule, as vLLM's first (v0) rejection sampler worked:
form the normalised residual normalize(max(0, p - q)) at ALL B x K positions, take every
argmax, then keep the one at each row's first rejection. Same answers as `verify_batch` on
ordinary inputs (tests/library/test_batched.py checks it), but its temporaries are [B, K, V]: at
B = 256, K = 8, V = 32000 one float32 copy is 262 MB, and it makes several. `verify_batch`
forms one residual row per rejected row instead (O(B (K + V)) work, not O(B K V)).

It is kept simple on purpose, so it does not do what `verify_batch` adds: no validation, no
placeholders (-1), no logits, and the residual is computed in the input precision, so where
two excesses of a row lie within float rounding of each other it may break the tie
differently from the plain rule (`verify_batch` replays those rows exactly).

    >>> import numpy as np
    >>> count, bonus = naive_verify_batch(np.array([[0]]), np.array([[[0.8, 0.2]]]),
    ...                                   np.array([[[0.2, 0.8], [0.5, 0.5]]]), np.array([[0.5]]))
    >>> count.tolist(), bonus.tolist()          # 0.5 > 0.2 / 0.8: rejected; residual [0, 1]
    ([0], [1])
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def naive_verify_batch(draft_tokens: npt.ArrayLike, draft_probs: npt.ArrayLike, target_probs: npt.ArrayLike,
                       random_samples: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(acceptance_count [B], bonus_token [B]) by the graded rule, with a residual at every position."""
    tokens, q, p, u = draft_tokens, draft_probs, target_probs, random_samples
    batch, k = tokens.shape
    idx = tokens[..., None]                                                     # [B, K, 1]
    px = np.take_along_axis(p[:, :k], idx, axis=2)[..., 0].astype(np.float64)  # [B, K]
    qx = np.take_along_axis(q, idx, axis=2)[..., 0].astype(np.float64)          # [B, K]
    reject = u.astype(np.float64) > np.minimum(1.0, px / qx)                    # [B, K]: not u <= min(1, p/q)
    excess = np.maximum(p[:, :k] - q, 0)                                        # [B, K, V]  <- every position
    mass = excess.sum(axis=2, keepdims=True)                                    # [B, K, 1]
    residual = np.where(mass > 0, excess / np.where(mass > 0, mass, 1), p[:, :k])  # [B, K, V]; no mass: p
    corrections = residual.argmax(axis=2)                                       # [B, K]
    rejected = reject.any(axis=1)                                               # [B]
    count = np.where(rejected, reject.argmax(axis=1) if k else 0, k)            # [B]
    bonus = np.full(batch, -1)
    rows = np.flatnonzero(rejected)
    bonus[rows] = corrections[rows, count[rows]]
    if p.shape[1] > k:                                                          # the bonus row
        bonus[~rejected] = p[~rejected, k].argmax(axis=1)
    return count, bonus
