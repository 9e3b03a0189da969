"""Benchmark: batched verification against a per-row Python loop and a naive full-residual version.

Run:  .venv/bin/python benchmarks/bench_verify.py [--quick]

Prints, for float32 rows at V = 32000, K in {4, 8} and B in {1, 64, 256}, the time per batch of
  verify_batch            (specdec.batched, validate=True: every row checked, as the plain rule does)
  verify_batch, no val.   (validate=False: the inputs are trusted)
  per-row loop            (verify_speculative_tokens on each row; plain-Python validation of 32000-entry rows
                           is slow, so it is timed on a few rows and scaled to B: stated in the table)
  naive                   (NumPy, forms normalize(max(0, p - q)) at all B x K positions; no validation)
and the ratios; then the plain verify_speculative_tokens per call (K = 4, V = 50 and 32000), and the
Monte Carlo throughput of sample_batch (verified drafts per second, V = 50, K = 4, B = 100k).

Like is compared with like: loop / verify_batch both validate; naive / verify_batch(validate=False)
neither does. Targets (2-core machine): >= 100x the loop and >= 3x naive at B = 256, >= 1e6 drafts/s.
Times are best-of-n with time.perf_counter. This is a script, not a test: nothing is asserted.
"""

import argparse
import time

import numpy as np

from specdec import verify_speculative_tokens
from specdec.batched import sample_batch, verify_batch


def best_time(fn, repeats):
    """Best wall time of `repeats` calls: the least disturbed by other processes."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def make_batch(B, K, V, rng, dtype=np.float32):
    """Random rows: p uniform-random normalised, q = p times noise in [0.5, 1.5) renormalised, x ~ q, u ~ U[0, 1)."""
    p = rng.random((B, K + 1, V), dtype=dtype)                  # [B, K + 1, V]
    p /= p.sum(axis=-1, keepdims=True)
    q = p[:, :K] * (0.5 + rng.random((B, K, V), dtype=dtype))   # [B, K, V]
    q /= q.sum(axis=-1, keepdims=True)
    tokens = np.empty((B, K), np.int64)
    for b in range(B):                                           # row by row: no [B, K, V] float64 cumsum
        tokens[b] = (np.cumsum(q[b], axis=-1) < rng.random((K, 1))).sum(-1).clip(max=V - 1)
    return tokens, q, p, rng.random((B, K))


def naive_verify(tokens, q, p, u):
    """The same rule, forming the normalised residual at every position ([B, K, V] temporaries)."""
    B, K = tokens.shape
    idx = tokens[..., None]                                                     # [B, K, 1]
    px = np.take_along_axis(p[:, :K], idx, axis=2)[..., 0].astype(np.float64)  # [B, K]
    qx = np.take_along_axis(q, idx, axis=2)[..., 0].astype(np.float64)          # [B, K]
    reject = u > np.minimum(1.0, px / qx)                                       # [B, K]
    excess = np.maximum(p[:, :K] - q, 0)                                        # [B, K, V]
    mass = excess.sum(axis=2, keepdims=True)                                    # [B, K, 1]
    residual = np.where(mass > 0, excess / np.where(mass > 0, mass, 1), p[:, :K])  # [B, K, V]
    corrections = residual.argmax(axis=2)                                       # [B, K]
    rejected = reject.any(axis=1)                                               # [B]
    count = np.where(rejected, reject.argmax(axis=1), K)                        # [B]
    bonus = np.full(B, -1)
    rows = np.flatnonzero(rejected)
    bonus[rows] = corrections[rows, count[rows]]
    bonus[~rejected] = p[~rejected, K].argmax(axis=1)
    return count, bonus


def loop_verify(tokens, q, p, u):
    """The per-row Python loop (NumPy rows passed as they are: faster here than .tolist() first)."""
    return [verify_speculative_tokens(tokens[b], q[b], p[b], u[b]) for b in range(len(tokens))]


def batch_table(args, rng):
    V, repeats, loop_rows = 32000, (2 if args.quick else 5), (1 if args.quick else 4)
    print(f"float32, V = {V}; time per batch in ms (best of {repeats}); loop timed on min(B, {loop_rows}) rows "
          "and scaled to B")
    head = (f"{'K':>2} {'B':>4} | {'batch':>9} {'batch nv':>9} {'loop':>10} {'naive':>9} | "
            f"{'loop/batch':>10} {'naive/nv':>9} {'naive/batch':>11}")
    print(head)
    print("-" * len(head))
    results = {}
    for K in (4, 8):
        for B in (1, 64, 256):
            tokens, q, p, u = make_batch(B, K, V, rng)
            out = verify_batch(tokens, q, p, u)
            naive = naive_verify(tokens, q, p, u)
            assert out["acceptance_count"].tolist() == naive[0].tolist()   # same answers, or the timing is moot
            assert out["bonus_token"].tolist() == naive[1].tolist()
            t_batch = best_time(lambda: verify_batch(tokens, q, p, u), repeats)
            t_fast = best_time(lambda: verify_batch(tokens, q, p, u, validate=False), repeats)
            t_naive = best_time(lambda: naive_verify(tokens, q, p, u), repeats)
            n = min(B, loop_rows)
            few = (tokens[:n], q[:n], p[:n], u[:n])
            t_loop = best_time(lambda: loop_verify(*few), 1) * B / n
            results[K, B] = (t_loop / t_batch, t_naive / t_fast)
            print(f"{K:>2} {B:>4} | {t_batch * 1e3:9.2f} {t_fast * 1e3:9.3f} {t_loop * 1e3:10.0f} {t_naive * 1e3:9.2f} | "
                  f"{t_loop / t_batch:9.0f}x {t_naive / t_fast:8.1f}x {t_naive / t_batch:10.2f}x")
            del tokens, q, p, u, few
    print("batch = verify_batch (validate=True); nv = validate=False. loop/batch: both validate every row;")
    print("naive/nv: neither validates; naive/batch includes validation (all B K V reads), most of verify_batch's time.")
    return results


def plain_per_call(args, rng):
    for V, calls in ((50, 200 if args.quick else 2000), (32000, 1 if args.quick else 3)):
        tokens, q, p, u = make_batch(1, 4, V, rng, dtype=np.float64)
        row = (tokens[0].tolist(), q[0].tolist(), p[0].tolist(), u[0].tolist())
        t = best_time(lambda: [verify_speculative_tokens(*row) for _ in range(calls)], 3) / calls
        print(f"verify_speculative_tokens, K = 4, V = {V:>5}: {t * 1e6:10.1f} us per call (plain-Python lists)")


def monte_carlo(args, rng):
    B, K, V = (20_000 if args.quick else 100_000), 4, 50
    tokens, q, p, _ = make_batch(B, K, V, rng, dtype=np.float64)
    gen = np.random.default_rng(0)
    rates = {}
    for validate in (True, False):
        t = best_time(lambda: sample_batch(tokens, q, p, gen, validate=validate), 2 if args.quick else 3)
        rates[validate] = B * K / t
        print(f"sample_batch, B = {B}, K = {K}, V = {V}, validate={validate!s:5}: {t * 1e3:7.1f} ms per batch, "
              f"{rates[validate] / 1e6:5.2f} M verified drafts/s")
    return rates


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and loop rows, a smaller Monte Carlo")
    args = parser.parse_args()
    rng = np.random.default_rng(2023)
    start = time.perf_counter()
    results = batch_table(args, rng)
    print()
    plain_per_call(args, rng)
    print()
    rates = monte_carlo(args, rng)
    print()
    print("targets:")
    for K in (4, 8):
        loop_ratio, naive_ratio = results[K, 256]
        print(f"  K = {K}, B = 256: verify_batch >= 100x the loop: {loop_ratio:.0f}x "
              f"{'MET' if loop_ratio >= 100 else 'NOT MET'};  >= 3x naive (validate=False): {naive_ratio:.1f}x "
              f"{'MET' if naive_ratio >= 3 else 'NOT MET'}")
    print(f"  sample_batch >= 1e6 verified drafts/s (validate=True): {rates[True]:.2e} "
          f"{'MET' if rates[True] >= 1e6 else 'NOT MET'}")
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
