"""How long one dense layer `x @ W` takes, by weight size and by rows: the measurements behind lesson 09.

Scoring gamma + 1 positions instead of one multiplies a layer's arithmetic by
gamma + 1 but not the bytes of weights it reads. Which of the two bounds the
time depends on the arithmetic intensity (flops per byte of weights) and on
where W lives: a roofline (Williams, Waterman and Patterson 2009) says

    time(rows) >= max(bytes(W) / bandwidth, 2 * rows * size(W) / peak flops)

so r(rows) = time(rows) / time(1) could stay near 1 while the memory term wins
(big W, streamed from DRAM every call) and grows like rows once the
arithmetic does (small W, sitting in a cache). What NumPy's kernels do is
another matter: one row goes to a matrix-vector kernel, two or more to a
matrix-matrix kernel that first copies W into panels, so time(2) can be well
above time(1) whatever the roofline allows. `layer_time_samples` measures it
(every repeat kept, for intervals: `rows_ratio`), `cache_sizes` reads the
machine's caches, `product_rates` (the compute roof is their best) and `bandwidth`
measure the two roofs. Unlike
`specdec.generation.measure` (the decoding loop), this times one NumPy call in
isolation.

A whole target call (lesson 08) is timed the same way: `call_cost_samples`
times calls that compute n new positions on a cached prefix, the state a
verification call finds (the correction and gamma drafts after an accepted
prefix), for one model or several interleaved; `call_cost_ratios` gives
r(gamma) = cost(gamma + 1) / cost(1); `call_cost_fit` fits cost(n) = fixed +
n * per_position where a line holds (from n = 2 by default: the one-position
call runs other kernels) and reports the one-position call's step off the line
and the line's misfit at every n; `cost_steps` says where one more position
costs less (a kernel working on rows in groups). Each figure has a bootstrap
interval over texts.

    >>> levels = cache_sizes()              # [(1, 'Data', 49152), ..., (3, 'Unified', 33554432)] on the course machine
    >>> all(size > 0 for _, _, size in levels)
    True
    >>> round(intensity(rows=4, itemsize=4), 3)   # 2 flops per weight per row, 4 bytes per weight
    2.0
    >>> costs = {n: [0.9 + 0.1 * n, 1.1 + 0.1 * n] for n in (1, 2, 3)}   # two texts, ms: fixed 1, 0.1 a position
    >>> fit = call_cost_fit(costs, start=1)
    >>> round(fit.fixed[0], 9), round(fit.per_position[0], 9), round(call_cost_ratios(costs)[2][0], 9)   # r(2): 1.3/1.1
    (1.0, 0.1, 1.181818182)
"""

import glob
import os
import time
from dataclasses import dataclass

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


def layer_time_samples(sizes_mb, rows, width=2048, repeats=5, min_seconds=2e-3, seed=0, clock=time.process_time):
    """{(megabytes, rows): array [repeats] of seconds per `x @ W`}, W of `width` x (MB / width) float32.

    One W per size. Within a size, the row counts are timed in a shuffled order on every repeat (round), so a
    burst of load hits them alike, and entry j of every array is round j (`rows_ratio` pairs them); each
    timing loops until `min_seconds` have passed (short calls are repeated many times, long ones once).
    `clock`: CPU time by default.
    """
    rng = np.random.default_rng(seed)
    out = {}
    for mb in sizes_mb:
        W = _weights(mb, width)
        xs = {m: np.full((m, width), 0.25, np.float32) for m in rows}
        xs[min(rows)] @ W                                          # untimed: first touch, code paths
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
        out.update({(mb, m): np.asarray(t) for m, t in times.items()})
        del W
    return out


def layer_times(sizes_mb, rows, width=2048, repeats=5, min_seconds=2e-3, seed=0, clock=time.process_time):
    """{(megabytes, rows): seconds per `x @ W`}: the medians of `layer_time_samples` (same arguments)."""
    samples = layer_time_samples(sizes_mb, rows, width, repeats, min_seconds, seed, clock)
    return {key: float(np.median(t)) for key, t in samples.items()}


def rows_ratio(samples, mb, m, base=1, **kw):
    """(r, low, high): time(m rows) / time(base rows) at `mb` MB, medians over rounds, the rounds resampled
    in pairs (`layer_time_samples` times both in every round)."""
    a, b = np.asarray(samples[mb, m], float), np.asarray(samples[mb, base], float)
    return bootstrap_ci(lambda idx: np.median(a[idx], -1) / np.median(b[idx], -1), len(a), **kw)


def product_rates(n=1024, repeats=3, clock=time.process_time):
    """[repeats]: float32 GFLOP/s of an [n, n] @ [n, n] product (all in cache-friendly blocks), one per repeat."""
    a = np.full((n, n), 0.5, np.float32)
    a @ a
    return np.array([2 * n ** 3 / _timed(lambda: a @ a, clock) / 1e9 for _ in range(repeats)])


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
    A model with `keep` (a cache to cut back: `TransformerModel`) is cut to text[:k - 1] before each
    call; a model without a cache (`MLPModel`) computes the n positions anyway.
    On each text (id lists, at most the model's context long, with room for the largest n after
    the cut points) the n are timed in a shuffled order, each at the same `cuts` cut points k in
    the text's second half, so every n sees the same attention lengths and a burst of load hits
    the n alike. Texts should be new to the process (`measure.fresh_prompts`); the cache is
    filled, untimed, before each n. `clock`: CPU time by default.

    `model` may be a dict {name: model}: then every n of every text is timed on each model in turn, in a
    shuffled order, and the result is {name: {n: array}}, the models' costs measured at the same moments.
    """
    models = model if isinstance(model, dict) else {None: model}
    rng, order, names = np.random.default_rng(seed), list(positions), list(models)
    out = {name: {n: [] for n in order} for name in names}
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
            rng.shuffle(names)
            for name in names:
                m = models[name]
                cached = hasattr(m, "keep")
                if cached:
                    m.probs_for_positions(ids, len(ids))        # untimed: the cache holds the whole text
                seconds = []
                for k in ks:                                   # descending: keep() only ever cuts back
                    if cached:
                        m.keep(k - 1)
                    t0 = clock()
                    m.probs_for_positions(ids[:k - 1 + n], k)
                    seconds.append(clock() - t0)
                out[name][n].append(float(np.median(seconds)))
    result = {name: {n: np.asarray(v[n]) for n in sorted(v)} for name, v in out.items()}
    return result if isinstance(model, dict) else result[None]


@dataclass
class CallCostFit:
    """The line cost(n) = fixed + n * per_position fitted from n = `start` on, with what it leaves out.

    Every figure is (estimate, low, high), the 95% interval resampling the texts. `step` is the one-position
    call against the line, cost(1) - (fixed + per_position), when the fit starts above n = 1 (None otherwise):
    negative when one position costs less than the line says. `misfit[n]` is (mean cost(n) - line(n)) / line(n)
    at every measured n, the fitted ones included.
    """

    start: int
    fixed: tuple
    per_position: tuple
    step: tuple
    misfit: dict

    def line(self, n):
        """The fitted line at n (seconds)."""
        return self.fixed[0] + n * self.per_position[0]

    def worst(self):
        """(n, misfit) where the fitted line misses the mean cost most, among the n it was fitted to."""
        n = max((n for n in self.misfit if n >= self.start), key=lambda n: abs(self.misfit[n][0]))
        return n, self.misfit[n]

    def misses(self):
        """The fitted n whose misfit's interval excludes 0: where the line is off by more than the noise."""
        return [n for n in sorted(self.misfit) if n >= self.start and not self.misfit[n][1] <= 0 <= self.misfit[n][2]]


def _line(costs, start):
    """(ns, statistic): statistic(idx) gives (mean cost at every n [n, ...], fixed [...], slope [...]) on the texts
    idx, the least-squares line through the mean costs at n >= start."""
    all_ns = sorted(costs)
    ns = np.array([n for n in all_ns if n >= start], dtype=float)
    if len(ns) < 2:
        raise ValueError(f"a line needs at least 2 values of n >= {start}, got {len(ns)}")
    y = np.array([np.asarray(costs[n], dtype=float) for n in all_ns])      # [positions, texts]
    rows = [all_ns.index(int(n)) for n in ns]
    dx = ns - ns.mean()

    def statistic(idx):
        means = y[:, idx].mean(-1)                                  # [positions, ...]
        fitted = means[rows]
        slope = np.tensordot(dx, fitted - fitted.mean(0), axes=(0, 0)) / (dx @ dx)
        return means, fitted.mean(0) - slope * ns.mean(), slope
    return all_ns, y.shape[1], statistic


def call_cost_fit(costs, start=2, **kw):
    """A `CallCostFit`: the least-squares line through the mean cost over texts at n = start, start + 1, ...

    `costs` {n: per-text seconds, one value per text, the same texts for every n} (`call_cost_samples`).
    start = 2 (the default) leaves the one-position call out of the fit: NumPy computes one row with a
    matrix-vector kernel and several with a matrix-matrix one, whose cost differs by more than a position
    (the fit reports that step); start = 1 fits every n (a model that computes each position alone). The 95%
    intervals resample the texts (`measure.bootstrap_ci`; keywords go to it), every figure from the same
    resamples. The fit is linear in the costs: the line through the differences of two models' costs on the
    same texts is the difference of their lines.
    """
    all_ns, texts, line = _line(costs, start)

    def misfit(n):
        def statistic(idx):
            means, fixed, slope = line(idx)
            predicted = fixed + n * slope
            return (means[all_ns.index(n)] - predicted) / predicted
        return statistic

    def step(idx):
        means, fixed, slope = line(idx)
        return means[all_ns.index(1)] - (fixed + slope)

    return CallCostFit(start, bootstrap_ci(lambda idx: line(idx)[1], texts, **kw),
                       bootstrap_ci(lambda idx: line(idx)[2], texts, **kw),
                       bootstrap_ci(step, texts, **kw) if start > 1 and 1 in costs else None,
                       {n: bootstrap_ci(misfit(n), texts, **kw) for n in all_ns})


def fit_share(part, whole, start=2, which="fixed", **kw):
    """(share, low, high): the fixed part (which="fixed") or the per-position part ("per_position") of the line
    fitted to `part` over that of the line fitted to `whole`, both on the same resampled texts (`call_cost_fit`)."""
    k = {"fixed": 1, "per_position": 2}[which]
    _, texts, line_part = _line(part, start)
    _, texts_whole, line_whole = _line(whole, start)
    if texts != texts_whole:
        raise ValueError(f"part has {texts} texts and whole {texts_whole}: measure both on the same texts")
    return bootstrap_ci(lambda idx: line_part(idx)[k] / line_whole(idx)[k], texts, **kw)


def call_cost_ratios(costs, **kw):
    """{gamma: (r, low, high)}: r(gamma) = cost(gamma + 1) / cost(1), a ratio of sums over texts (`measure.ratio_ci`).

    `costs` as for `call_cost_fit`, with n = 1 among its keys; gamma = n - 1 for every other n.
    """
    if 1 not in costs:
        raise ValueError("costs has no n = 1: r(gamma) is relative to a call that computes one position")
    return {n - 1: ratio_ci(costs[n], costs[1], **kw) for n in sorted(costs) if n != 1}


def cost_steps(costs, **kw):
    """{n: (d, low, high)}: the mean over texts of cost(n + 1) - cost(n), paired by text (the same texts, timed
    side by side), for each n with n + 1 measured. An interval below 0 says that a call of n + 1 positions
    cost less than one of n: a kernel that works on rows in groups, cheaper on a full group than on a partial one.
    """
    out = {}
    for n in sorted(costs):
        if n + 1 in costs:
            d = np.asarray(costs[n + 1], float) - np.asarray(costs[n], float)
            out[n] = bootstrap_ci(lambda idx, d=d: d[idx].mean(-1), len(d), **kw)
    return out
