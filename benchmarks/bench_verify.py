"""Benchmark: batched verification (specdec.batched) against Hugging Face, a naive batch and a Python loop.

Run:  .venv/bin/python benchmarks/bench_verify.py [--quick] [--only hf,probs,seeds,mc]
The Hugging Face table needs torch and transformers, which the course does not install: use a
separate environment, for example
    python3 -m venv /tmp/benchenv && /tmp/benchenv/bin/pip install torch transformers numpy
    /tmp/benchenv/bin/pip install -e . && /tmp/benchenv/bin/python benchmarks/bench_verify.py
Without them that table is skipped (the reason is printed) and the rest runs.

Method (every table). Each contender is timed on inputs drawn just before its call and never
seen before (fresh random rows every repetition, so no cache is warmed by a repeat); the
contenders run interleaved in one process, their order rotated each repetition; times are
medians with the [min - max] over repetitions; a ratio is computed per repetition (the
contenders' calls of one repetition run back to back) and reported as median [min - max].
Wall-clock times by default: note the machine's load (printed first) beside any number you quote.
On a busy machine, --clock cpu times each call by the calling thread's CPU time (time.thread_time),
which other processes barely disturb; it counts one thread only, so torch then runs with 1 thread.

Tables:
 1. hf     From logits, time per sequence, V = 32000 and 128000, B = 1 and 256, K = 4, float32:
           Hugging Face transformers' `_speculative_sampling` (torch on the CPU, with 1 thread as
           NumPy has, and with torch's default; batch 1 only, so B = 256 is 256 calls),
           `sample_batch(..., from_logits=True)` with per-row seeds (the serving set-up), and
           "softmax, then sample_batch": a NumPy softmax in front of the probability path. The
           drafts come from q (x ~ softmax(z_q)), z_q = z_p + 0.3 N(0, 1): about 3 in 4 drafts are
           accepted, so most rows verify most positions (an early rejection would favour ours).
 2. probs  From probabilities, time per batch, V = 32000: verify_batch (validate=True and False)
           against `specdec.batched.naive.naive_verify_batch` (a residual at all B x K positions) and the
           per-row loop of verify_speculative_tokens (timed on 4 rows, scaled to B).
 3. seeds  The price of per-row seeds: sample_batch with seeds [B] against one Generator.
 4. mc     Monte Carlo throughput of sample_batch at V = 50 (verified drafts per second).
This is a script, not a test: nothing is asserted.
"""

import argparse
import os
import statistics
import time

import numpy as np

from specdec import verify_speculative_tokens
from specdec.batched import sample_batch, verify_batch
from specdec.batched.naive import naive_verify_batch


# --- the harness ---------------------------------------------------------------------------------

CLOCK = time.perf_counter   # --clock cpu: time.thread_time, this thread's CPU time


def interleaved(contenders, make_input, reps):
    """{name: [seconds per repetition]}: each call gets a fresh input from make_input(); order rotates."""
    times = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            args = make_input()
            start = CLOCK()
            contenders[name](*args)
            times[name].append(CLOCK() - start)
            del args
    return times


def spread(values, scale=1.0, fmt="{:.3f}"):
    """'median [min - max]' of values * scale."""
    v = [x * scale for x in values]
    return f"{fmt.format(statistics.median(v))} [{fmt.format(min(v))}-{fmt.format(max(v))}]"


def ratios(slow, fast):
    """Per-repetition ratios slow / fast (same repetition, back to back)."""
    return [a / b for a, b in zip(slow, fast)]


# --- inputs --------------------------------------------------------------------------------------

def make_logits(B, K, V, rng, noise=1.0):
    """Target logits z_p [B, K + 1, V] ~ 3 N(0, 1), draft z_q = z_p[:, :K] + noise N(0, 1), drafts x ~ softmax(z_q)."""
    zp = rng.standard_normal((B, K + 1, V), dtype=np.float32)
    zp *= 3.0
    zq = rng.standard_normal((B, K, V), dtype=np.float32)
    zq *= noise
    zq += zp[:, :K]
    tokens = np.empty((B, K), np.int64)
    for b in range(B):                                            # row by row: no [B, K, V] float64 temporary
        w = np.exp(zq[b] - zq[b].max(axis=-1, keepdims=True))     # [K, V]
        cdf = np.cumsum(w, axis=-1, dtype=np.float64)
        tokens[b] = (cdf <= rng.random((K, 1)) * cdf[:, -1:]).sum(axis=-1)
    return tokens, zq, zp


def make_probs(B, K, V, rng, dtype=np.float32):
    """Random rows: p uniform-random normalised, q = p times noise in [0.5, 1.5) renormalised, x ~ q, u ~ U[0, 1)."""
    p = rng.random((B, K + 1, V), dtype=dtype)                    # [B, K + 1, V]
    p /= p.sum(axis=-1, keepdims=True)
    q = p[:, :K] * (0.5 + rng.random((B, K, V), dtype=dtype))     # [B, K, V]
    q /= q.sum(axis=-1, keepdims=True)
    tokens = np.empty((B, K), np.int64)
    for b in range(B):
        tokens[b] = (np.cumsum(q[b], axis=-1) < rng.random((K, 1))).sum(-1).clip(max=V - 1)
    return tokens, q, p, rng.random((B, K))


def softmax32(z):
    """A plain NumPy softmax over the last axis (float32 in, float32 out), as a pipeline would put in front."""
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    e /= e.sum(axis=-1, keepdims=True)
    return e


# --- 1. from logits, against Hugging Face ----------------------------------------------------------

def load_hf():
    """(torch, _speculative_sampling), or (None, reason)."""
    try:
        import torch
        from transformers.generation.utils import _speculative_sampling
    except ImportError as err:
        return None, f"{err} (torch and transformers are not course dependencies; see this file's docstring)"
    torch.manual_seed(0)
    return (torch, _speculative_sampling), None


def table_head(title, head):
    print(title)
    print(head)
    print("-" * len(head))


def hf_table(args, rng):
    hf, why = load_hf()
    if hf is None:
        print(f"Hugging Face comparison skipped: {why}")
        return None
    torch, speculative_sampling = hf
    import transformers
    K, noise, threads = 4, 0.3, torch.get_num_threads()
    hf_runs = {"HF 1t": 1} | ({f"HF {threads}t": threads} if threads > 1 and CLOCK is time.perf_counter else {})
    # "1t": one torch thread, as NumPy uses one core; "Nt": torch's default (wall clock only: thread_time sees
    # one thread)
    table_head(f"From logits, float32, K = {K}, draft z_q = z_p + {noise} N(0, 1); time per sequence in ms, median "
               f"[min-max] over the repetitions; torch {torch.__version__} with "
               f"{' and '.join(map(str, hf_runs.values()))} thread(s), "
               f"transformers {transformers.__version__}",
               f"{'V':>6} {'B':>3} {'reps':>4} | " + " ".join(f"{n:>20}" for n in hf_runs) +
               f" {'sample_batch':>20} {'softmax+batch':>20} | " + " ".join(f"{n + ' / ours':>17}" for n in hf_runs) +
               f" {'HF 1t / sm+b':>17} | {'accepted/K HF, ours':>19}")
    results = {}
    for V in (32000, 128000):
        for B in (1, 256):
            reps = (3 if B > 1 else 15) if args.quick else (5 if B > 1 else 41)
            accepted = {"hf": [], "ours": []}
            calls = iter(range(1, 10**9))                               # a new seed per row and call, as a server

            def seeds():                                                # gives each step its own (a fixed seed
                return np.arange(B) + B * next(calls)                  # would reuse the same uniforms every call)

            def run_hf(tokens, zq, zp, threads):
                torch.set_num_threads(threads)
                ids, q_t, p_t = torch.from_numpy(tokens), torch.from_numpy(zq), torch.from_numpy(zp)
                for b in range(B):                                    # batch 1 only: one call per sequence
                    _, n = speculative_sampling(ids[b:b + 1], q_t[b:b + 1], K, p_t[b:b + 1])
                    accepted["hf"].append(int(n))

            def run_ours(tokens, zq, zp):
                out = sample_batch(tokens, zq, zp, seeds(), from_logits=True)      # per-row seeds
                accepted["ours"].extend(out["acceptance_count"].tolist())

            def run_softmax(tokens, zq, zp):
                sample_batch(tokens, softmax32(zq), softmax32(zp), seeds())

            contenders = {name: (lambda t: lambda *a: run_hf(*a, t))(t) for name, t in hf_runs.items()}
            contenders |= {"ours": run_ours, "softmax": run_softmax}
            times = interleaved(contenders, lambda: make_logits(B, K, V, rng, noise), reps)
            torch.set_num_threads(threads)
            per_seq = 1e3 / B
            r = {name: ratios(times[name], times["ours"]) for name in hf_runs}
            results[V, B] = {name: statistics.median(v) for name, v in r.items()}
            print(f"{V:>6} {B:>3} {reps:>4} | " + " ".join(f"{spread(times[n], per_seq):>20}" for n in hf_runs) +
                  f" {spread(times['ours'], per_seq):>20} {spread(times['softmax'], per_seq):>20} | " +
                  " ".join(f"{spread(r[n], fmt='{:.2f}'):>17}" for n in hf_runs) +
                  f" {spread(ratios(times['HF 1t'], times['softmax']), fmt='{:.2f}'):>17} | "
                  f"{np.mean(accepted['hf']) / K:>9.2f} {np.mean(accepted['ours']) / K:>9.2f}")
    print("ours = sample_batch(from_logits=True, per-row seeds, validate=True); softmax+batch = NumPy softmax, then "
          "sample_batch on probabilities.\nHF Nt = Hugging Face with N torch threads (NumPy uses one core). "
          "A ratio > 1: ours is faster per sequence. The last columns: the mean fraction of drafts accepted\nby "
          "each (the same rule, "
          "so they agree within noise).")
    return results


# --- 2. from probabilities: the naive batch and the loop -------------------------------------------

def loop_verify(tokens, q, p, u):
    """The per-row Python loop over the plain rule (NumPy rows passed as they are)."""
    return [verify_speculative_tokens(tokens[b], q[b], p[b], u[b]) for b in range(len(tokens))]


def probs_table(args, rng):
    V, reps, loop_rows = 32000, (3 if args.quick else 7), (1 if args.quick else 4)
    table_head(f"From probabilities, float32, V = {V}; time per batch in ms, median [min-max] of {reps} repetitions; "
               f"the loop is timed on {loop_rows} rows and scaled to B",
               f"{'K':>2} {'B':>4} | {'batch':>19} {'batch nv':>19} {'naive':>19} {'loop':>10} | "
               f"{'naive / nv':>17} {'loop / batch':>17}")
    results = {}
    for K in (4, 8):
        for B in (1, 64, 256):
            few = min(B, loop_rows)
            times = interleaved({
                "batch": lambda *a: verify_batch(*a),
                "nv": lambda *a: verify_batch(*a, validate=False),
                "naive": naive_verify_batch,
                "loop": lambda *a: loop_verify(*(x[:few] for x in a)),
            }, lambda: make_probs(B, K, V, rng), reps)
            times["loop"] = [t * B / few for t in times["loop"]]
            r_naive, r_loop = ratios(times["naive"], times["nv"]), ratios(times["loop"], times["batch"])
            results[K, B] = statistics.median(r_naive), statistics.median(r_loop)
            batch, naive = spread(times['batch'], 1e3, '{:.2f}'), spread(times['nv'], 1e3, '{:.2f}')
            print(f"{K:>2} {B:>4} | {batch:>19} {naive:>19} "
                  f"{spread(times['naive'], 1e3, '{:.2f}'):>19} {statistics.median(times['loop']) * 1e3:>10.0f} | "
                  f"{spread(r_naive, fmt='{:.1f}'):>17} {spread(r_loop, fmt='{:.0f}'):>17}")
    print("batch = verify_batch (validate=True); nv = validate=False; naive = naive_verify_batch (no validation).\n"
          "naive / nv: neither validates. loop / batch: both validate every row.")
    tokens, q, p, u = make_probs(256, 4, V, rng)                  # the same answers, or the timing is moot
    out, naive = verify_batch(tokens, q, p, u), naive_verify_batch(tokens, q, p, u)
    same = out["acceptance_count"].tolist() == naive[0].tolist() and out["bonus_token"].tolist() == naive[1].tolist()
    print(f"naive_verify_batch equals verify_batch on a fresh [256, 4, {V}] batch: {same}")
    return results


# --- 3. per-row seeds ------------------------------------------------------------------------------

def seeds_table(args, rng):
    from specdec.batched.seeds import row_uniforms
    reps = 5 if args.quick else 15
    print(f"The price of per-row seeds: sample_batch from logits, float32, K = 4, time per batch in ms, "
          f"median [min-max] of {reps}")
    calls = iter(range(1, 10**9))
    for V, B in ((32000, 1), (32000, 256)):
        gen = np.random.default_rng(1)
        times = interleaved({
            "seeds": lambda *a: sample_batch(*a, np.arange(B) + B * next(calls), from_logits=True),
            "generator": lambda *a: sample_batch(*a, gen, from_logits=True),
        }, lambda: make_logits(B, 4, V, rng), reps)
        r = ratios(times["seeds"], times["generator"])
        print(f"  V = {V}, B = {B:>3}: per-row seeds {spread(times['seeds'], 1e3)}, one Generator "
              f"{spread(times['generator'], 1e3)}; seeds / Generator {spread(r, fmt='{:.3f}')}")
    seeds = np.arange(256)
    t = interleaved({"streams": lambda: row_uniforms(seeds, 5)}, lambda: (), 200)["streams"]
    g = interleaved({"gen": lambda: gen.random((256, 5))}, lambda: (), 200)["gen"]
    print(f"  the draws alone, [256, 5]: row_uniforms {spread(t, 1e6, '{:.1f}')} us, "
          f"Generator.random {spread(g, 1e6, '{:.1f}')} us")


# --- 4. Monte Carlo throughput ----------------------------------------------------------------------

def mc_table(args, rng):
    B, K, V = (20_000 if args.quick else 100_000), 4, 50
    gen = np.random.default_rng(0)
    times = interleaved({v: (lambda v: lambda *a: sample_batch(*a[:3], gen, validate=v))(v) for v in (True, False)},
                        lambda: make_probs(B, K, V, rng, dtype=np.float64), 3 if args.quick else 5)
    for v in (True, False):
        print(f"sample_batch, B = {B}, K = {K}, V = {V}, validate={v!s:5}: {spread(times[v], 1e3, '{:.1f}')} ms per "
              f"batch, {B * K / statistics.median(times[v]) / 1e6:.2f} M verified drafts/s")
    rate = B * K / statistics.median(times[True])
    for V, calls in ((50, 200 if args.quick else 1000), (32000, 1 if args.quick else 3)):
        tokens, q, p, u = make_probs(1, 4, V, rng, dtype=np.float64)
        row = (tokens[0].tolist(), q[0].tolist(), p[0].tolist(), u[0].tolist())
        t = interleaved({"plain": lambda: [verify_speculative_tokens(*row) for _ in range(calls)]}, lambda: (), 3)
        print(f"verify_speculative_tokens, K = 4, V = {V:>5}: {statistics.median(t['plain']) / calls * 1e6:10.1f} us "
              "per call (plain-Python lists)")
    return rate


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--only", default="hf,probs,seeds,mc", help="comma-separated tables: hf, probs, seeds, mc")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: time each call by this thread's CPU time (steady on a busy machine; "
                             "single-threaded contenders only, so HF runs with 1 torch thread)")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    tables = args.only.split(",")
    rng = np.random.default_rng(2023)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; "
          f"numpy {np.__version__}; clock: {args.clock} ({CLOCK.__name__})")
    start = time.perf_counter()
    hf = hf_table(args, rng) if "hf" in tables else None
    probs = probs_table(args, rng) if "probs" in tables else None
    rate = None
    if "seeds" in tables:
        print()
        seeds_table(args, rng)
    if "mc" in tables:
        print()
        rate = mc_table(args, rng)
    print("\ntargets:")
    if hf:
        for (V, B), r in hf.items():
            print(f"  from logits, V = {V:>6}, B = {B:>3}: >= 1.5x HF per sequence: " + "; ".join(
                f"{name} {x:.2f}x {'MET' if x >= 1.5 else 'NOT MET'}" for name, x in r.items()))
    if probs:
        for K in (4, 8):
            naive, loop = probs[K, 256]
            print(f"  K = {K}, B = 256: >= 100x the loop: {loop:.0f}x {'MET' if loop >= 100 else 'NOT MET'}; "
                  f">= 3x naive (validate=False): {naive:.1f}x {'MET' if naive >= 3 else 'NOT MET'}")
    if rate:
        met = "MET" if rate >= 1e6 else "NOT MET"
        print(f"  sample_batch >= 1e6 verified drafts/s (validate=True): {rate:.2e} {met}")
    print(f"total {time.perf_counter() - start:.0f} s; load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
