"""Wall-clock speedup of speculative generation over plain decoding, on prompts the process has not seen.

The protocol (`specdec.measure`): after an untimed warm-up on other prompts,
every timed prompt is a fresh slice of the held-out end of the corpus,
generated once by plain decoding and once by speculative decoding at one gamma,
back to back, the side that goes first alternating. A speedup is total plain
time / total speculative time over a gamma's prompts, with a 95% bootstrap
interval over prompts, on CPU time (which other programs do not inflate) and on
the wall clock; alpha and tokens per call are pooled the same way. The
cost ratio c (a draft step on unseen contexts / a one-position target call) and
r(gamma) (a call scoring gamma + 1 positions / one) are measured the same way
(the draft on the contexts speculative decoding visits, recorded by a copy of
the draft), and give the prediction theory(c, r) = E(alpha, gamma) / (r(gamma) + gamma c).

"warm" repeats the same prompts afterwards: the draft has cached the rows
those texts visit. It is shown beside the cold figure, never instead of it.
theory(c, r) leaves out the per-token work around the model calls: plain
decoding's choice of a token (an argmax, or a draw: ~3 us at T > 0) and
speculative decoding's verification; they roughly cancel when greedy, and the
draw makes sampled runs land a few percent above theory.

    python benchmarks/bench_generate.py [--quick] [--modes greedy,sampled] [--verify token]
"""

import argparse
import os
import subprocess
import sys
import time

# One BLAS thread (unless you set another count): on a shared 2-core machine a threaded
# product for a few positions waits for a busy core. Set before NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from specdec.decode import autoregressive_generate  # noqa: E402
from specdec.measure import call_costs, compare, fresh_prompts, predicted_speedup, visited_contexts  # noqa: E402
from specdec.models import load_pretrained  # noqa: E402
from specdec.models.data import pydoc_text  # noqa: E402
from specdec.theory import expected_tokens_per_step  # noqa: E402

MODES = {"greedy": 0.0, "sampled": 1.0}
# The verification rules this benchmark can time. Today speculative_generate has one, its default;
# a rule added there is benchmarked by adding its name here (passed on as verify=<name>).
RULES = {"token": None}


def ci(est, lo, hi, fmt="{:.2f}"):
    return f"{fmt.format(est)} [{fmt.format(lo)}, {fmt.format(hi)}]"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer prompts per gamma and fewer gammas (~15 s)")
    parser.add_argument("--modes", default="greedy,sampled", help="comma-separated: greedy (T = 0), sampled (T = 1)")
    parser.add_argument("--verify", default="token", choices=sorted(RULES), help="verification rule")
    parser.add_argument("--tokens", type=int, default=200, help="new tokens per prompt")
    parser.add_argument("--seed", type=int, default=0, help="picks the prompts")
    args = parser.parse_args(argv)
    gammas = [1, 2, 3, 4, 6, 8] if args.quick else list(range(1, 9))
    per_gamma = 8 if args.quick else 24
    modes = [m.strip() for m in args.modes.split(",")]
    if any(m not in MODES for m in modes):
        parser.error(f"--modes: unknown mode in {args.modes!r}; choose from {', '.join(MODES)}")

    load = os.getloadavg()
    t_load = time.perf_counter()
    draft, target = load_pretrained()
    t_load = time.perf_counter() - t_load
    shadow, _ = load_pretrained()          # records the contexts c is measured on, so that `draft` stays cold
    text = pydoc_text()
    held_out = int(len(text) * 0.95)      # the text after this was never used to train either model
    n = len(gammas) * per_gamma
    # Disjoint fresh prompts: per mode, a warm-up set, a set for c and r, and the timed set.
    per_mode = 8 + 6 + n
    pool = fresh_prompts(text, per_mode * len(modes), 32, seed=args.seed, start=held_out)
    encode = target.encode
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start; "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}; models loaded in {t_load:.2f} s")
    print(f"{per_gamma} fresh prompts per gamma (32 characters of held-out text each) x {args.tokens} new tokens; "
          f"verification rule: {args.verify}")
    print("speedup: total plain time / total speculative time over a gamma's prompts [95% bootstrap interval over\n"
          "prompts], on the process's CPU time (which other programs' load does not inflate) and on the wall clock;\n"
          "cold = each prompt generated once, after a warm-up on other prompts; warm = the same prompts again\n")

    for m, mode in enumerate(modes):
        temperature = MODES[mode]
        warmup, cost_prompts, timed = (pool[m * per_mode:][a:b] for a, b in ((0, 8), (8, 14), (14, per_mode)))
        for p in warmup:  # untimed: first allocations, code paths, the short contexts' rows
            compare(draft, target, [encode(p)], [4], args.tokens, temperature)
        texts = [encode(p) + autoregressive_generate(target, encode(p), args.tokens, temperature, rng=1)
                 for p in cost_prompts]  # text the draft has never been asked about
        # c on the contexts speculative decoding visits (a copy of the draft records them; ours never saw them)
        steps = visited_contexts(shadow, target, [encode(p) for p in cost_prompts], 4, args.tokens, temperature)
        target_cost, draft_cost = call_costs(draft, target, texts, temperature, clock="cpu", draft_contexts=steps)
        c = draft_cost / target_cost[1]
        r = {g: target_cost[g + 1] / target_cost[1] for g in range(1, 9)}
        prompts = [encode(p) for p in timed]
        cold = compare(draft, target, prompts, gammas, args.tokens, temperature, seed=args.seed,
                       verify=RULES[args.verify])
        warm = compare(draft, target, prompts, gammas, args.tokens, temperature, seed=args.seed,
                       verify=RULES[args.verify])
        busy = np.median([w / c_ for res in cold.values() for side in ("plain", "spec")
                          for w, c_ in zip(res.times[side, "wall"], res.times[side, "cpu"])])
        print(f"{mode} (T = {temperature:g}), CPU time: target call {target_cost[1] * 1e6:.1f} us for 1 position, "
              f"r(gamma) = cost(gamma + 1 positions) / cost(1): " + " ".join(f"{r[g]:.2f}" for g in range(1, 9)))
        print(f"{' ' * len(mode)}  draft step on unseen contexts {draft_cost * 1e6:.2f} us: c = {c:.3f}; "
              f"wall / CPU time of the runs (median): {busy:.2f} (1.00 when nothing else runs)")
        header = (f"{'gamma':>5} {'alpha':>19} {'tok/call':>17} {'E(alpha)':>8} {'cold, CPU':>17} "
                  f"{'cold, wall':>17} {'theory(c,r)':>11} {'CPU/theory':>10} {'warm, CPU':>9}")
        print(header)
        print("-" * len(header))
        best = None
        for g in gammas:
            a, e = cold[g].alpha(), cold[g].tokens_per_call()
            s, w, hot = (res.total_speedup(clock) for res, clock in ((cold[g], "cpu"), (cold[g], "wall"), (warm[g], "cpu")))
            theory = predicted_speedup(a[0], g, c, r[g])
            print(f"{g:>5} {ci(*a, '{:.3f}'):>19} {ci(*e):>17} {expected_tokens_per_step(a[0], g):>8.2f} "
                  f"{ci(*s) + 'x':>17} {ci(*w) + 'x':>17} {theory:>10.2f}x {s[0] / theory:>9.2f}x {hot[0]:>8.2f}x")
            if best is None or s[0] > best[1][0]:
                best = g, s, w, theory
        g, s, w, theory = best
        print(f"best gamma {g}: cold speedup {ci(*s)}x CPU time, {ci(*w)}x wall clock; "
              f"CPU figure {s[0] / theory - 1:+.0%} from theory(c, r) = {theory:.2f}x\n")
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    sys.exit(main())
