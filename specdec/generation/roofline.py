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

    >>> levels = cache_sizes()              # [(1, 'Data', 49152), ..., (3, 'Unified', 33554432)] on the course machine
    >>> all(size > 0 for _, _, size in levels)
    True
    >>> round(intensity(rows=4, itemsize=4), 3)   # 2 flops per weight per row, 4 bytes per weight
    2.0
"""

import glob
import os
import time

import numpy as np

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
