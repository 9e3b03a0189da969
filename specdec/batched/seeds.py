"""Per-row random streams: row b's uniforms depend on its own seed only, never on the batch (NumPy).

`sample_batch` with one shared `numpy.random.Generator` hands out draws in batch order, so a
row's tokens change when other rows join its batch. A server wants what vLLM gives each
request: its own generator, so a request's output depends on its seed, not on its neighbours.
Here a row's stream is a pure function of its seed: uniform number j of the row with seed (s, t) is

    u(s, j) = top 53 bits of mix(key + (j + 1) * G) / 2**53,   key = mix(mix(s + G) + (t + 1) * G)

where G = 0x9E3779B97F4A7C15 and mix is the SplitMix64 output function (Steele, Lea & Flood,
"Fast splittable pseudorandom number generators", OOPSLA 2014; the same function seeds
xoshiro). Counter-based: any u(s, j) costs a few integer operations, computed for all rows
at once with no Python loop. Statistically strong, not cryptographic.

A row's seed is a pair (s, t) = (request seed, decoding step); a plain integer s means (s, 0).
Subtle: the stream is a function of the seed alone, so a decoding loop that passes the same
seed at every step reuses the same uniforms at every step (its tokens are then correlated
across steps, and the sequence is no longer distributed as the target's): pass (seed, step).

    >>> u = row_uniforms(np.array([7, 8, 7]), 3)     # [B, n]: rows 0 and 2 share seed 7
    >>> u.shape, u[0].tolist() == u[2].tolist(), u[0].tolist() == u[1].tolist()
    ((3, 3), True, False)
    >>> bool((u == row_uniforms(np.array([[7, 0], [8, 0], [7, 0]]), 3)).all())  # (s, 0) is s
    True
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

GOLDEN = np.uint64(0x9E3779B97F4A7C15)       # 2**64 / golden ratio, odd: the SplitMix64 increment
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function on a uint64 array (arithmetic wraps modulo 2**64)."""
    z = z ^ (z >> np.uint64(30))
    z = z * _M1
    z = z ^ (z >> np.uint64(27))
    z = z * _M2
    return z ^ (z >> np.uint64(31))


def row_keys(seeds: npt.ArrayLike) -> np.ndarray:
    """One 64-bit key per row from seeds [B] or (seed, step) pairs [B, 2] (non-negative integers)."""
    seeds = np.asarray(seeds, dtype=np.uint64)
    if seeds.ndim == 1:                                                        # s means (s, 0): (0 + 1) G = G
        return mix(mix(seeds + GOLDEN) + GOLDEN)                               # [B]
    return mix(mix(seeds[:, 0] + GOLDEN) + (seeds[:, 1] + np.uint64(1)) * GOLDEN)   # [B]


def row_uniforms(seeds: npt.ArrayLike, n: int) -> np.ndarray:
    """Uniforms [B, n] in [0, 1): row b holds u(seeds[b], 0), ..., u(seeds[b], n - 1)."""
    key = row_keys(seeds)                                                               # [B]
    counters = (np.arange(1, n + 1, dtype=np.uint64) * GOLDEN)[None, :]                 # [1, n]
    bits = mix(key[:, None] + counters) >> np.uint64(11)                               # [B, n]: 53 bits
    return bits.astype(np.float64) * 2.0 ** -53                                         # exact: 53 bits fit
