"""r(rows) of one dense layer `x @ W` by weight size: where extra positions are nearly free, and where not.

For float32 matrices W of 1 MB to far past the last-level cache and x of
1 to 16 rows, prints r(rows) = time(rows) / time(1 row) (the cost of scoring
rows positions in one call, relative to one), then the two roofs: the peak
arithmetic rate of one core and the bandwidth from DRAM and from cache, and
their balance points. Times are medians of repeats in CPU time, the row
counts of a size timed in a shuffled order on every repeat (`specdec.generation.roofline`).
Then one call of the transformer target (lesson 08): r(gamma) for gamma = 1..8 and the
split of a call into a fixed part and a part per position, cost(n) = F + n P fitted from
n = 2 on, with the one-position call's step off the line and the line's misfit, with 95%
bootstrap intervals over fresh held-out texts (`call_cost_samples`, `call_cost_fit`,
`call_cost_ratios`). Lesson 09 explains both tables.

    python benchmarks/bench_roofline.py [--quick] [--no-calls]
"""

import argparse
import math
import os
import subprocess
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # one core; set before NumPy loads

from specdec.generation.roofline import (bandwidth, cache_sizes, call_cost_fit, call_cost_ratios,  # noqa: E402
                                         call_cost_samples, last_level_cache, layer_times, product_rates)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats (~5 s)")
    parser.add_argument("--width", type=int, default=2048, help="rows of W (the layer's input width)")
    parser.add_argument("--no-calls", action="store_true", help="skip the transformer target's call costs")
    args = parser.parse_args(argv)
    sizes = [1, 4, 16, 64, 256] if args.quick else [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    rows = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16]
    repeats = 3 if args.quick else 7

    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start; "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    levels = cache_sizes()
    llc = last_level_cache()
    print("caches: " + (", ".join(f"L{lv} {kind} {size // 1024} KB" for lv, kind, size in levels) or "not reported"))
    times = layer_times(sizes, rows, width=args.width, repeats=repeats)
    print(f"\nx @ W, float32, W = [{args.width}, MB * 2^20 / ({args.width} * 4)]; CPU time, median of {repeats}")
    print("r(rows) = time(rows) / time(1 row)")
    header = f"{'W':>6} {'in':>5} {'1 row':>10} {'GB/s':>6} " + " ".join(f"{f'r({m})':>5}" for m in rows[1:])
    print(header)
    print("-" * len(header))
    for mb in sizes:
        where = "?" if llc is None else "cache" if mb * 2 ** 20 < llc else "DRAM"
        print(f"{mb:>3} MB {where:>5} {times[mb, 1] * 1e3:>7.3f} ms {mb * 2 ** 20 / times[mb, 1] / 1e9:>6.1f} "
              + " ".join(f"{times[mb, m] / times[mb, 1]:>5.2f}" for m in rows[1:]))
    rates, dram = product_rates(repeats=5), bandwidth(times, sizes)
    peak, cache = float(rates.max()), sizes[0] * 2 ** 20 / times[sizes[0], 1] / 1e9
    print(f"\npeak {peak:.0f} GFLOP/s: the best of {len(rates)} products of the same matrices, warm, the slowest "
          f"{rates.min():.0f} (one core, float32 [1024, 1024] @ [1024, 1024]; a roof is what the core can reach)")
    print(f"bandwidth {dram:.1f} GB/s from DRAM ({sizes[-1]} MB), {cache:.0f} GB/s from cache ({sizes[0]} MB)")
    print(f"balance point: {peak / dram:.1f} flop/byte from DRAM (memory-bound, by the roofline, up to "
          f"{math.ceil(2 * peak / dram) - 1} rows), {peak / cache:.1f} from cache "
          f"(up to {math.ceil(2 * peak / cache) - 1})")
    print("(x @ W does 2 flops per 4-byte weight per row)")
    if not args.no_calls:
        print()
        transformer_calls(texts=12 if args.quick else 32)
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


def transformer_calls(texts, cuts=6):
    """Print r(gamma) and cost(n) = F + n P of the transformer target, with 95% intervals over fresh texts."""
    from specdec.generation.measure import fresh_prompts
    from specdec.models import load_transformer
    from specdec.models.data import pydoc_text

    model = load_transformer()
    text = pydoc_text()
    pool = [model.encode(t) for t in fresh_prompts(text, texts + 4, 96, seed=8, start=int(len(text) * 0.95))]
    call_cost_samples(model, pool[:4], cuts=4)                        # untimed warm-up, on other texts
    costs = call_cost_samples(model, pool[4:], cuts=cuts)
    r = call_cost_ratios(costs)
    fit = call_cost_fit(costs)                                        # the line from n = 2; the step at n = 1
    ms = lambda ci: f"{ci[0] * 1e3:.3f} [{ci[1] * 1e3:.3f}, {ci[2] * 1e3:.3f}]"
    print("transformer target (lesson 08): one call computing n = gamma + 1 new positions on a cached prefix")
    print(f"CPU time, {texts} fresh texts x {cuts} calls per n, 95% intervals over texts")
    print(f"cost(1) {costs[1].mean() * 1e3:.3f} ms; r(gamma) = cost(gamma + 1) / cost(1):")
    print("  " + "  ".join(f"r({g}) {r[g][0]:.2f} [{r[g][1]:.2f}, {r[g][2]:.2f}]" for g in range(1, 5)))
    print("  " + "  ".join(f"r({g}) {r[g][0]:.2f} [{r[g][1]:.2f}, {r[g][2]:.2f}]" for g in range(5, 9)))
    print(f"cost(n) = F + n P fitted to n = {fit.start}..{max(costs)}: F = {ms(fit.fixed)} ms per call, "
          f"P = {ms(fit.per_position)} ms per position")
    print(f"step at n = 1, cost(1) - (F + P): {ms(fit.step)} ms (one row: NumPy's matrix-vector kernel)")
    worst, miss = fit.worst()
    print(f"the line misses the mean cost by up to {abs(miss[0]):.0%} (n = {worst}); beyond its interval at n = "
          + (", ".join(map(str, fit.misses())) or "none"))

if __name__ == "__main__":
    sys.exit(main())
