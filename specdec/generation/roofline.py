"""How long one dense layer `x @ W` takes, by weight size and by rows: the measurements behind lesson 09.

Scoring gamma + 1 positions instead of one multiplies a layer's arithmetic by
gamma + 1 but not the bytes of weights it reads. Which of the two bounds the
time depends on the arithmetic intensity (flops per byte of weights) and on
where W lives: a roofline (Williams, Waterman and Patterson 2009) says

    time(rows) >= max(bytes(W) / bandwidth, 2 * rows * size(W) / peak flops)

so r(rows) = time(rows) / time(1) stays near 1 while the memory term wins
(big W, streamed from DRAM every call) and grows like rows once the
arithmetic does (small W, sitting in a cache). `layer_times` measures it,
`cache_sizes` reads the machine's caches, `peak_gflops` and `bandwidth`
measure the two roofs. Unlike `specdec.generation.measure` (the decoding loop), this
times one NumPy call in isolation.

A whole target call (lesson 08) is timed the same way: `call_cost_samples`
times calls that compute n new positions on a cached prefix, the state a
verification call finds (the correction and gamma drafts after an accepted
prefix), `call_cost_fit` splits the cost into a fixed part per call and a part
per position, cost(n) = fixed + n * per_position, and `call_cost_ratios` gives
r(gamma) = cost(gamma + 1) / cost(1), each with a bootstrap interval over texts.

    >>> levels = cache_sizes()              # [(1, 'Data', 49152), ..., (3, 'Unified', 33554432)] on the course machine
    >>> all(size > 0 for _, _, size in levels)
    True
    >>> round(intensity(rows=4, itemsize=4), 3)   # 2 flops per weight per row, 4 bytes per weight
    2.0
    >>> costs = {n: [0.9 + 0.1 * n, 1.1 + 0.1 * n] for n in (1, 2, 3)}   # two texts, ms: fixed 1, 0.1 a position
    >>> (fixed, _, _), (per_position, _, _) = call_cost_fit(costs)
    >>> round(fixed, 9), round(per_position, 9), round(call_cost_ratios(costs)[2][0], 9)   # r(2) = 1.3 / 1.1
    (1.0, 0.1, 1.181818182)
"""

import glob
import os
import time

import numpy as np

from .measure import bootstrap_ci, ratio_ci

MB = 2 ** 20


def cache_sizes():
    """[(level, type, bytes)] of CPU 0's caches from /sys (Linux), else from sysconf; [] if unknown."""
    out = []
    for index in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            with open(os.path.join(index, "level")) as f:
                level = int(f.read())
            with open(os.path.join(index, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(index, "size")) as f:
                text = f.read().strip()                      # "48K", "1024K", "32768K"
            out.append((level, kind, int(text[:-1]) * {"K": 2 ** 10, "M": 2 ** 20}[text[-1]]))
        except (OSError, ValueError, KeyError, IndexError):
            continue
    if not out:   # no /sys (a container without it, macOS): glibc's sysconf names, where they exist
        for level, kind, name in [(1, "Data", "SC_LEVEL1_DCACHE_SIZE"), (2, "Unified", "SC_LEVEL2_CACHE_SIZE"),
                                  (3, "Unified", "SC_LEVEL3_CACHE_SIZE")]:
            try:
                size = os.sysconf(name)
            except (ValueError, OSError):
                size = 0
            if size > 0:
                out.append((level, kind, size))
    return out


def last_level_cache():
    """Bytes of the largest cache level, or None when the machine does not say."""
    levels = cache_sizes()
    return max(size for _, _, size in levels) if levels else None


def intensity(rows, itemsize=4):
    """Arithmetic intensity of `x @ W` with `rows` rows: 2 * rows flops per weight / itemsize bytes."""
    return 2 * rows / itemsize


def _weights(megabytes, width, dtype=np.float32):
    """A [width, n] matrix of `megabytes` MB, every page written (so none is the kernel's shared zero page)."""
    n = max(1, int(round(megabytes * MB / (width * np.dtype(dtype).itemsize))))
    return np.full((width, n), 0.5, dtype)


def layer_times(sizes_mb, rows, width=2048, repeats=5, min_seconds=2e-3, seed=0, clock=time.process_time):
    """{(megabytes, rows): seconds per `x @ W`}, medians over `repeats`, with W of `width` x (MB / width) float32.

    One W per size. Within a size, the row counts are timed in a shuffled order on every repeat, so a
    burst of load hits them alike; each timing loops until `min_seconds` have passed (short calls
    are repeated many times, long ones once). `clock`: CPU time by default, which does not count
    moments when another program held the processor.
    """
    rng = np.random.default_rng(seed)
    out = {}
    for mb in sizes_mb:
        W = _weights(mb, width)
        xs = {m: np.full((m, width), 0.25, np.float32) for m in rows}
        x1 = xs[min(rows)]
        x1 @ W                                                     # untimed: first touch, code paths
        times = {m: [] for m in rows}
        for _ in range(repeats):
            order = list(rows)
            rng.shuffle(order)
            for m in order:
                x, calls, t0 = xs[m], 0, clock()
                while True:
                    x @ W
                    calls += 1
                    elapsed = clock() - t0
                    if elapsed >= min_seconds:
                        break
                times[m].append(elapsed / calls)
        out.update({(mb, m): float(np.median(t)) for m, t in times.items()})
        del W
    return out


def peak_gflops(n=1024, repeats=3, clock=time.process_time):
    """Measured float32 GFLOP/s of an [n, n] @ [n, n] product (all in cache-friendly blocks): the compute roof."""
    a = np.full((n, n), 0.5, np.float32)
    a @ a
    best = min(_timed(lambda: a @ a, clock) for _ in range(repeats))
    return 2 * n ** 3 / best / 1e9


def bandwidth(times, sizes_mb):
    """GB/s of one row over the largest of `sizes_mb` (W streamed once per call): the memory roof."""
    mb = max(sizes_mb)
    return mb * MB / times[mb, 1] / 1e9


def _timed(fn, clock):
    t0 = clock()
    fn()
    return clock() - t0


# ---------------------------------------------------------------- a whole target call: fixed and per-position cost
def call_cost_samples(model, texts, positions=range(1, 10), cuts=8, seed=0, clock=time.process_time):
    """{n: array [len(texts)]}: per text, the median seconds of a call that computes n new positions.

    Each call is what verification asks of a target with a KV cache: the cache holds text[:k - 1],
    and the call scores the n rows p(. | text[:t]) for t = k..k + n - 1, so it computes the n
    positions text[k - 1:k - 1 + n] (the last accepted token, then n - 1 drafts) in one pass.
    `model` needs `probs_for_positions` and `keep` (a cache to cut back; `TransformerModel`).
    On each text (id lists, at most the model's context long, with room for the largest n after
    the cut points) the n are timed in a shuffled order, each at the same `cuts` cut points k in
    the text's second half, so every n sees the same attention lengths and a burst of load hits
    the n alike. Texts should be new to the process (`measure.fresh_prompts`); the cache is
    filled, untimed, before each n. `clock`: CPU time by default.
    """
    rng, order = np.random.default_rng(seed), list(positions)
    out = {n: [] for n in order}
    for ids in texts:
        ids = list(ids)
        last = len(ids) - max(order) + 1                     # the largest cut with room for every n
        first = max(2, len(ids) // 2)
        if last - first < cuts:
            raise ValueError(f"a text of {len(ids)} ids has room for {max(0, last - first)} cut points "
                             f"after its first half, not {cuts}: use longer texts or fewer cuts")
        ks = sorted(rng.choice(np.arange(first, last), cuts, replace=False).tolist(), reverse=True)
        rng.shuffle(order)
        for n in order:
            model.probs_for_positions(ids, len(ids))            # untimed: the cache holds the whole text
            seconds = []
            for k in ks:                                       # descending: keep() only ever cuts back
                model.keep(k - 1)
                t0 = clock()
                model.probs_for_positions(ids[:k - 1 + n], k)
                seconds.append(clock() - t0)
            out[n].append(float(np.median(seconds)))
    return {n: np.asarray(out[n]) for n in sorted(out)}


def call_cost_fit(costs, **kw):
    """((fixed, low, high), (per_position, low, high)): the least-squares line cost(n) = fixed + n * per_position.

    `costs` {n: per-text seconds, one value per text, the same texts for every n} (`call_cost_samples`).
    The line is fitted to the mean over texts at each n; the 95% intervals resample the texts
    (`measure.bootstrap_ci`; keywords go to it), both parts from the same resamples.
    """
    ns = np.array(sorted(costs), dtype=float)
    y = np.array([np.asarray(costs[n], dtype=float) for n in sorted(costs)])      # [positions, texts]
    if len(ns) < 2:
        raise ValueError(f"a line needs at least 2 values of n, got {len(ns)}")
    dx = ns - ns.mean()

    def slope(idx):
        means = y[:, idx].mean(-1)                                  # [positions, ...]
        return np.tensordot(dx, means - means.mean(0), axes=(0, 0)) / (dx @ dx)

    def intercept(idx):
        return y[:, idx].mean(-1).mean(0) - slope(idx) * ns.mean()

    return bootstrap_ci(intercept, y.shape[1], **kw), bootstrap_ci(slope, y.shape[1], **kw)


def call_cost_ratios(costs, **kw):
    """{gamma: (r, low, high)}: r(gamma) = cost(gamma + 1) / cost(1), a ratio of sums over texts (`measure.ratio_ci`).

    `costs` as for `call_cost_fit`, with n = 1 among its keys; gamma = n - 1 for every other n.
    """
    if 1 not in costs:
        raise ValueError("costs has no n = 1: r(gamma) is relative to a call that computes one position")
    return {n - 1: ratio_ci(costs[n], costs[1], **kw) for n in sorted(costs) if n != 1}
