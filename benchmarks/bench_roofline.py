"""r(rows) of one dense layer `x @ W` by weight size: where extra positions are nearly free, and where not.

For float32 matrices W of 1 MB to far past the last-level cache and x of
1 to 16 rows, prints r(rows) = time(rows) / time(1 row) (the cost of scoring
rows positions in one call, relative to one), then the two roofs: the peak
arithmetic rate of one core and the bandwidth from DRAM and from cache, and
their balance points. Times are medians of repeats in CPU time, the row
counts of a size timed in a shuffled order on every repeat (`specdec.generation.roofline`).
Lesson 09 explains the table.

    python benchmarks/bench_roofline.py [--quick]
"""

import argparse
import os
import subprocess
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # one core; set before NumPy loads

from specdec.generation.roofline import bandwidth, cache_sizes, last_level_cache, layer_times, peak_gflops  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats (~5 s)")
    parser.add_argument("--width", type=int, default=2048, help="rows of W (the layer's input width)")
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
    peak, dram = peak_gflops(), bandwidth(times, sizes)
    cache = sizes[0] * 2 ** 20 / times[sizes[0], 1] / 1e9
    print(f"\npeak {peak:.0f} GFLOP/s (one core, float32 [1024, 1024] @ [1024, 1024]); bandwidth {dram:.1f} GB/s "
          f"from DRAM ({sizes[-1]} MB), {cache:.0f} GB/s from cache ({sizes[0]} MB)")
    print(f"balance point: {peak / dram:.1f} flop/byte from DRAM (memory-bound below {2 * peak / dram:.0f} rows), "
          f"{peak / cache:.1f} from cache ({2 * peak / cache:.0f} rows); x @ W does 2 flops per 4-byte weight per row")
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    sys.exit(main())
