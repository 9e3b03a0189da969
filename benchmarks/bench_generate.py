"""Wall-clock speedup of speculative generation over plain decoding, with the shipped models.

For gamma = 1..8, greedy (temperature 0) and sampled (temperature 1):
measured alpha and tokens per target call beside the theory's
(1 - alpha^(gamma+1)) / (1 - alpha), and the measured speedup beside
walltime_speedup(alpha, gamma, c) with the measured cost ratio c. The theory
assumes a target call costs the same for gamma + 1 positions as for one; the
last column replaces 1 by the measured r(gamma) = cost(gamma + 1) / cost(1).

    python benchmarks/bench_generate.py [--quick]
"""

import argparse
import os
import time

# One BLAS thread (unless you set another count): on a shared 2-core machine a threaded
# product for >= 6 positions waits for a busy core and costs 10x more. Set before NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from specdec.decode import autoregressive_generate, speculative_generate
from specdec.models import load_pretrained
from specdec.models.data import pydoc_text
from specdec.theory import expected_tokens_per_step, walltime_speedup


def best_time(fn, repeats):
    """Smallest wall time of `repeats` runs (the machine is shared: the minimum is the least disturbed)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def call_costs(draft, target, contexts, repeats):
    """Seconds per target call scoring 1..9 positions; per draft call (lookup + argmax or draw) by temperature."""
    rng = np.random.default_rng(0)
    target_cost = {}
    for n in range(1, 10):
        def score():
            for ids in contexts:
                target.probs_for_positions(ids, len(ids) - n + 1)
        target_cost[n] = best_time(score, repeats) / len(contexts)
    draft_cost = {}
    for temperature in (0.0, 1.0):
        def propose():  # the step speculative_generate takes: argmax alone when greedy, a draw + its row else
            for ids in contexts:
                draft.argmax_next(ids) if temperature == 0 else draft.propose(ids, temperature, rng)
        draft_cost[temperature] = best_time(propose, repeats) / len(contexts)
    return target_cost, draft_cost


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer prompts and tokens (~20 s)")
    args = parser.parse_args(argv)
    n_prompts, n_tokens, repeats = (3, 100, 2) if args.quick else (8, 200, 5)

    draft, target = load_pretrained()
    text = pydoc_text()
    prompts = [target.encode(text[i:i + 32]) for i in np.linspace(0, len(text) - 64, n_prompts).astype(int)]
    contexts = [target.encode(text[i:i + 40]) for i in range(1000, 1000 + 200 * 50, 200)]
    target_cost, draft_cost = call_costs(draft, target, contexts, 5)
    c = {t: cost / target_cost[1] for t, cost in draft_cost.items()}
    print(f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}; "
          f"target call: {target_cost[1] * 1e6:.1f} us for 1 position; r(gamma) = cost(gamma + 1) / cost(1): "
          + ", ".join(f"r({n - 1}) {target_cost[n] / target_cost[1]:.2f}" for n in range(2, 10)))
    print(f"draft call: {draft_cost[0.0] * 1e6:.1f} us greedy (c = {c[0.0]:.3f}), "
          f"{draft_cost[1.0] * 1e6:.1f} us sampled (c = {c[1.0]:.3f})")
    print(f"{len(prompts)} prompts x {n_tokens} new tokens, best of {repeats} runs\n")

    header = (f"{'mode':>7} {'gamma':>5} {'alpha':>6} {'tok/call':>8} {'theory':>7} {'err':>6} "
              f"{'speedup':>7} {'theory(c)':>9} {'theory(c,r)':>11}")
    print(header)
    print("-" * len(header))
    for mode, temperature in (("greedy", 0.0), ("sampled", 1.0)):
        for gamma in range(1, 9):
            results = []

            def plain():
                for p in prompts:
                    autoregressive_generate(target, p, n_tokens, temperature, rng=1)

            def spec():
                results[:] = [speculative_generate(draft, target, p, n_tokens, gamma, temperature, rng=1)
                              for p in prompts]
            # Interleaved, best of `repeats` each: a burst of load on the shared machine hits both alike.
            t_plain, t = float("inf"), float("inf")
            for _ in range(repeats):
                t_plain = min(t_plain, best_time(plain, 1))
                t = min(t, best_time(spec, 1))
            accepted = sum(sum(r.accepted) for r in results)
            tested = sum(sum(a + (a < d) for a, d in zip(r.accepted, r.drafted)) for r in results)
            alpha = accepted / tested
            per_call = sum(len(r.tokens) for r in results) / sum(r.target_calls for r in results)
            theory = expected_tokens_per_step(alpha, gamma)
            r_g = target_cost[gamma + 1] / target_cost[1]
            print(f"{mode:>7} {gamma:>5} {alpha:>6.3f} {per_call:>8.3f} {theory:>7.3f} "
                  f"{(per_call - theory) / theory:>+6.1%} {t_plain / t:>6.2f}x "
                  f"{walltime_speedup(alpha, gamma, c[temperature]):>8.2f}x {theory / (r_g + gamma * c[temperature]):>10.2f}x")


if __name__ == "__main__":
    main()
