"""Tokens per target call and wall-clock speedup of each verification rule, on prompts the process has not seen.

The rules (`speculative_generate(..., verify=...)`): greedy (temperature 0),
and token, block, typical and tree at --temperature (1 by default). A tree of
width w and depth d scores w + ... + w^d nodes and the root in one call; it is
run at every depth whose positions a chain also scores (width 2: depths 1 and
2, the positions of gamma 2 and 6), and set beside the token rule there.

The protocol (`specdec.generation.measure`): every timed prompt is a fresh slice of the
held-out end of the corpus, generated once by plain decoding and once by
speculative decoding at one gamma, back to back, the side that goes first
alternating. Each rule runs on a freshly loaded draft, after an untimed warm-up
on other text, so all rules can run the same prompts, each new to the draft
that meets it, and rules are compared on the same prompts (paired; a tree on
those of the chain that scores as many positions). A speedup is total plain
time / total speculative time over a gamma's prompts, with a 95% bootstrap
interval over prompts, on CPU time (which other programs do not inflate) and on
the wall clock; alpha (for a tree: the chance that a level keeps one of its
children) and tokens per call are pooled the same way. The cost ratio c (a
draft step on unseen contexts / a one-position target call) and r(gamma) (a
call scoring gamma + 1 positions / one) are measured the same way, once per
temperature, and give theory(c, r) = E(alpha, gamma) / (r(gamma) + gamma c);
for a tree, whose tokens per call E(alpha) does not describe, the measured
tokens per call / (r(nodes) + c x draft contexts per call).

"warm" repeats the same prompts afterwards: the draft has cached the rows
those texts visit. It is shown beside the cold figure, never instead of it.
theory(c, r) leaves out the per-token work around the model calls (plain
decoding's draw: ~3 us at T > 0; verification in Python) and the first call of
each generation, which computes the whole prompt on both sides. r is measured
twice: before the runs, on texts of their own (`call_costs`, n new positions on
a cached target), and in situ, from the cold runs' own calls (`TimedTarget`:
the median call that computes n positions over the median one-position call,
these from the plain runs); "CPU/theory(situ)" holds the speedup against
theory with that r. At T > 0 the draft step is also timed sampled against
greedy on the same contexts (the contexts sampling visits miss the n-gram's
longest contexts more often than greedy text does, and a miss costs more).

Every chain rule also runs with gamma="auto" (`specdec.generation.adaptive`: each step's gamma chosen from
alpha and the call costs the generation measures as it runs), on prompts of its own.

`--drafts` adds where the drafts come from (lesson 13), greedy and at --temperature, on the same prompts,
each kind on a fresh draft: prompt lookup (chain), the Medusa heads on the target's hidden states (chain and
threshold tree), an early exit through the target's first 3 blocks (chain, sharing the KV cache), and the
n-gram's threshold tree; the n-gram's chain is the token rule and greedy above. For each: alpha, c (the draft's
CPU time per drafted id over a one-position call, both timed in the runs), r in situ, tokens per call, the
speedup, and theory(c, r). `--contexts` times the token rule at T = --temperature, gamma 5, on prompts of 32
characters and of 300 (past the 256-character window: the rows come from later windows, and the next window's
cache is filled as the text goes), interleaved.

    python benchmarks/bench_generate.py [--quick] [--rules greedy,token,block,typical,tree] [--width 2]
                                        [--drafts] [--contexts]
"""

import argparse
import os
import subprocess
import sys
import time
from functools import partial

# One BLAS thread (unless you set another count): on a shared 2-core machine a threaded
# product for a few positions waits for a busy core. Set before NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from specdec.generation.decode import autoregressive_generate, speculative_generate  # noqa: E402
from specdec.generation.measure import (TimedTarget, call_costs, compare, fmt_ci, fresh_prompts,  # noqa: E402
                                        predicted_speedup, ratio_ci, ratio_difference_ci, sampled_step_ratio,
                                        visited_contexts)
from specdec.generation.race import TimedDraft  # noqa: E402
from specdec.generation.trees import ThresholdTreeDraft  # noqa: E402
from specdec.models import load_pretrained  # noqa: E402
from specdec.models.early_exit import EarlyExitDraft  # noqa: E402
from specdec.models.heads import HeadsDraft, load_heads  # noqa: E402
from specdec.models.lookup import PromptLookupDraft  # noqa: E402
from specdec.models.data import pydoc_text  # noqa: E402
from specdec.theory import expected_tokens_per_step  # noqa: E402

RULES = {   # verify= name: what it does (greedy runs at temperature 0, the others at --temperature)
    "greedy": "keep drafts while they are argmax p (temperature 0)",
    "token": "accept x ~ q with min(1, p/q), else draw from the residual (lossless)",
    "block": "block verification, Sun et al. 2024 (lossless)",
    "typical": "Medusa's typical acceptance, eps 0.09, delta 0.3 (NOT lossless)",
    "tree": "a draft tree, --width children per node, verified by recursive rejection (lossless)",
}
WARMUP, COST = 8, 6     # prompts: the untimed warm-up (training text); c and r, per temperature (held out)


def tree_nodes(width, depth):
    return sum(width ** k for k in range(1, depth + 1))


def settings(rule, gammas, width):
    """The gammas a rule runs at ("auto" too for a chain); for a tree, the depths whose nodes a chain of these
    gammas also scores."""
    if rule != "tree":
        return gammas + ["auto"]
    return [d for d in range(1, max(gammas) + 1) if tree_nodes(width, d) in gammas]


def measure_costs(load, target, prompts, warmup, temperature, tokens, positions):
    """(c, {n: r(n)}, one-position call seconds, sampled / greedy step) on a fresh draft, after a warm-up, on
    contexts it never saw. The last is None at T = 0; at T > 0, the cost of a sampled step over a greedy one on
    the SAME contexts (those sampling visits), each on its own fresh draft."""
    draft, shadow = load()[0], load()[0]   # the shadow records contexts; draft stays cold
    compare(draft, target, warmup, [4], tokens, temperature)
    texts = [p + autoregressive_generate(target, p, tokens, temperature, rng=1) for p in prompts]
    steps = visited_contexts(shadow, target, prompts, 4, tokens, temperature)
    per_call, per_step = call_costs(draft, target, texts, temperature, positions=range(1, positions + 1),
                                    clock="cpu", draft_contexts=steps)
    ratio = None if temperature == 0 else sampled_step_ratio(lambda: load()[0], [c for s in steps for c in s],
                                                              temperature)
    return per_step / per_call[1], {n - 1: per_call[n] / per_call[1] for n in per_call}, per_call[1], ratio


def rule_table(rule, temperature, cold, warm, cost, width, situ):
    """Print one rule's table; return {setting: (label, positions per call, tok/call, cold CPU, cold wall, warm)}.

    situ: the TimedTarget of the cold runs, whose calls give r(n) in situ (n new positions against 1).
    """
    c, r, _, _ = cost
    r_situ = {n - 1: situ.cost(n) / situ.cost(1) for n in situ.seconds if n > 1 and len(situ.seconds[n]) >= 5}
    tree = rule == "tree"
    busy = np.median([w / c_ for res in cold.values() for side in ("plain", "spec")
                      for w, c_ in zip(res.times[side, "wall"], res.times[side, "cpu"])])
    print(f"{rule} (T = {temperature:g}): {RULES[rule]}; wall / CPU time of the runs (median) {busy:.2f}")
    header = (f"{'depth' if tree else 'gamma':>5} {'pos/call':>8} {'alpha':>19} {'tok/call':>17} {'E(alpha)':>8} "
              f"{'cold, CPU':>17} {'cold, wall':>17} {'theory(c,r)':>11} {'CPU/theory':>10} {'r in situ':>9} "
              f"{'CPU/theory(situ)':>16} {'warm, CPU':>9}")
    print(header)
    print("-" * len(header))
    out = {}
    for g, res in cold.items():
        a, e = res.alpha(), res.tokens_per_call()
        s, w, hot = (x.total_speedup(clock) for x, clock in ((res, "cpu"), (res, "wall"), (warm[g], "cpu")))
        pos = sum(res.positions) / sum(res.calls)
        n = tree_nodes(width, g) if tree else g
        if g == "auto":                 # theory at the mean gamma drafted (drafts per call)
            n = g = max(1, min(max(r), round(sum(res.drafts) / sum(res.calls))))
        rs = r_situ.get(n, float("nan"))
        if tree:   # measured tokens per call over the call's cost: r at its nodes, c per draft context
            per_call = c * sum(res.drafts) / sum(res.calls)
            theory, situ_theory, expected = e[0] / (r[n] + per_call), e[0] / (rs + per_call), "-"
        else:
            theory, expected = predicted_speedup(a[0], g, c, r[g]), f"{expected_tokens_per_step(a[0], g):.2f}"
            situ_theory = predicted_speedup(a[0], g, c, rs)
        print(f"{str(res.gamma):>5} {pos:>8.2f} {fmt_ci(a, '.3f'):>19} {fmt_ci(e, '.2f'):>17} "
              f"{expected:>8} {fmt_ci(s, '.2f') + 'x':>17} "
              f"{fmt_ci(w, '.2f') + 'x':>17} {theory:>10.2f}x {s[0] / theory:>9.2f}x {rs:>9.2f} "
              f"{s[0] / situ_theory:>15.2f}x "
              f"{hot[0]:>8.2f}x")
        label = f"width {width} depth {g}" if tree else f"gamma {g}"
        key = g if res.gamma != "auto" else "auto"
        if key == "auto":
            label = f"auto (mean {sum(res.drafts) / sum(res.calls):.1f})"
        out[key] = label, pos, e, s, w, hot[0]
    print()
    return out


DRAFT_KINDS = {   # name: (what it is, make(target, load_models), verify, settings (gamma, or a tree's depth))
    "lookup": ("prompt lookup, the longest earlier match of 2..8 ids (chain)",
               lambda target, load: PromptLookupDraft(target.V), "chain", [2, 4, 8]),
    "heads": ("4 Medusa heads on the target's hidden state (chain)",
              lambda target, load: HeadsDraft(target, load_heads()), "chain", [1, 2, 3, 4]),
    "heads tree": ("the heads' threshold tree, paths >= 0.1, width 3",
                   lambda target, load: HeadsDraft(target, load_heads(), 0.1), "tree", [4]),
    "early exit": ("the target's first 3 of 4 blocks, its final LayerNorm and head (chain, shared KV cache)",
                   lambda target, load: EarlyExitDraft(target, 3), "chain", [1, 2, 3, 4]),
    "n-gram tree": ("the n-gram's threshold tree, paths >= 0.1, width 2",
                    lambda target, load: ThresholdTreeDraft(load()[0], 0.1), "tree", [8]),
}


def draft_kind_tables(target, load_models, by_gamma, per_gamma, warmup, temps, tokens, seed):
    """Each draft kind at each temperature: {(kind, T): [(setting label, alpha, tok/call, c, r, speedup, theory)]}."""
    out = {}
    for kind, (what, make, shape, gammas) in DRAFT_KINDS.items():
        for t in temps:
            rule = ("tree" if shape == "tree" else "token") if t > 0 else ("tree" if shape == "tree" else "greedy")
            kw = {"verify": rule, "width": (3 if kind == "heads tree" else 2) if shape == "tree" else None}
            keys = list(by_gamma)[:len(gammas)]                # a setting's prompts: those of a chain gamma
            prompts = [by_gamma[k][i] for i in range(per_gamma) for k in keys]
            draft = TimedDraft(make(target, load_models))
            compare(draft, target, warmup[:2], gammas[:1], tokens, t, **kw)          # untimed: code paths
            situ = TimedTarget(target)
            rows = []
            for g in gammas:                                   # one setting at a time: its own c
                draft.seconds, draft.drafted = 0.0, 0
                sub = prompts[gammas.index(g)::len(gammas)]
                res = compare(draft, situ, sub, [g], tokens, t, seed=seed, **kw)[g]
                one = situ.cost(1)
                c = draft.seconds / max(draft.drafted, 1) / one
                per_call = sum(res.positions) / sum(res.calls)
                n = int(round(per_call))
                r = situ.cost(n) / one if n in situ.seconds else float("nan")
                a, e, sp = res.alpha(), res.tokens_per_call(), res.total_speedup("cpu")
                drafted = draft.drafted / sum(res.calls)       # ids (nodes) drafted per call
                theory = (expected_tokens_per_step(a[0], g) if shape == "chain" else e[0]) / (r + drafted * c)
                label = (f"gamma {g}" if shape == "chain" else f"depth {g}") + f" ({per_call:.1f} pos)"
                rows.append((label, a, e, c, r, sp, theory))
            out[kind, t] = rows
            print(f"{kind} (T = {t:g}, {rule}): {what}")
            header = (f"{'setting':>18} {'alpha':>19} {'tok/call':>17} {'c':>7} {'r(situ)':>7} {'cold, CPU':>17} "
                      f"{'theory(c,r)':>11} {'CPU/theory':>10}")
            print(header + "\n" + "-" * len(header))
            for label, a, e, c, r, sp, theory in rows:
                print(f"{label:>18} {fmt_ci(a, '.3f'):>19} {fmt_ci(e, '.2f'):>17} {c:>7.4f} "
                      f"{r:>7.2f} {fmt_ci(sp, '.2f') + 'x':>17} "
                      f"{theory:>10.2f}x {sp[0] / theory:>9.2f}x")
            print()
    return out


def context_table(load_models, target, short, long, warmup, temperature, tokens, seed, gamma=5):
    """The token rule at gamma 5 on short and long prompts, interleaved, each side from a fresh cache whose prompt
    is computed untimed (the prompt's first call costs both sides alike and is not the window's doing): {name:
    (plain CPU seconds per prompt, speculative, tokens per call pairs)}."""
    draft = load_models()[0]
    compare(draft, target, warmup[:2], [gamma], tokens, temperature)
    out = {name: ([], [], [], []) for name in ("short", "long")}
    for i in range(min(len(short), len(long))):
        for name, pool in (("short", short), ("long", long))[::1 if i % 2 == 0 else -1]:
            prompt, (plain, spec, toks, calls) = pool[i], out[name]
            for side in ("plain", "spec")[::1 if (i // 2) % 2 == 0 else -1]:
                target.reset()
                target.probs_for_positions(prompt, len(prompt))           # untimed: the prompt
                rng = np.random.default_rng([seed, i])
                t0 = time.process_time()
                if side == "plain":
                    autoregressive_generate(target, prompt, tokens, temperature, rng)
                    plain.append(time.process_time() - t0)
                else:
                    res = speculative_generate(draft, target, prompt, tokens, gamma, temperature, rng)
                    spec.append(time.process_time() - t0)
                    toks.append(len(res.tokens))
                    calls.append(res.target_calls)
    return out


def paired(first, second):
    """Tokens per call of `second` minus `first`, two Comparisons on the same prompts in the same order."""
    return ratio_difference_ci(first.tokens, first.calls, second.tokens, second.calls)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer prompts per gamma and fewer gammas (a few minutes)")
    parser.add_argument("--rules", default=",".join(RULES), help="comma-separated verification rules")
    parser.add_argument("--temperature", type=float, default=1.0, help="of every rule but greedy (T = 0)")
    parser.add_argument("--width", type=int, default=2, help="children per node of the tree rule")
    parser.add_argument("--tokens", type=int, default=200, help="new tokens per prompt")
    parser.add_argument("--seed", type=int, default=0, help="picks the prompts")
    parser.add_argument("--target", choices=("transformer", "mlp"), default="transformer",
                        help="the target model (the MLP's calls cost ~15 us, the transformer's ~0.8 ms)")
    parser.add_argument("--models", default=None, metavar="DIR",
                        help="a folder with draft_ngram.npz and the target's weights instead of the shipped ones")
    parser.add_argument("--drafts", action="store_true", help="also each kind of draft (lesson 13): lookup, heads, "
                                                               "early exit, the n-gram's threshold tree")
    parser.add_argument("--contexts", action="store_true", help="also the token rule on prompts past the window")
    args = parser.parse_args(argv)
    rules = [m.strip() for m in args.rules.split(",")]
    if any(m not in RULES for m in rules) or len(set(rules)) < len(rules):
        parser.error(f"--rules: {args.rules!r}; choose each at most once from {', '.join(RULES)}")
    if not args.temperature > 0:
        parser.error(f"--temperature is {args.temperature}: it must be > 0 (greedy is the temperature-0 rule)")
    if args.width < 1:
        parser.error(f"--width is {args.width}, it must be >= 1")
    gammas = [1, 2, 4, 6] if args.quick else list(range(1, 9))
    per_gamma = 8 if args.quick else 24
    plan = {rule: settings(rule, gammas, args.width) for rule in rules}
    if "tree" in plan and not plan["tree"]:
        parser.error(f"--width {args.width}: no tree depth scores as many positions as a chain of gamma "
                     f"{', '.join(map(str, gammas))}")
    temperature = {rule: 0.0 if rule == "greedy" else args.temperature for rule in rules}
    temps = sorted(set(temperature.values()))

    load_models = partial(load_pretrained, *([args.models] if args.models else []), target=args.target)
    load = os.getloadavg()
    t_load = time.perf_counter()
    _, target = load_models()
    t_load = time.perf_counter() - t_load
    encode = target.encode
    text = pydoc_text()
    held_out = int(len(text) * 0.95)      # the text after this was never used to train either model
    # Disjoint fresh prompts: held-out text for c and r (per temperature) and for the timed runs, training text
    # for the warm-up. Prompt k of gamma g is timed[k * len(gammas) + j], j the place of g (as compare assigns them).
    slots = gammas + ["auto"]
    held = [encode(p) for p in fresh_prompts(text, COST * len(temps) + per_gamma * len(slots), 32, seed=args.seed,
                                             start=held_out)]
    cost_prompts, timed = held[:COST * len(temps)], held[COST * len(temps):]
    by_gamma = {g: timed[j::len(slots)] for j, g in enumerate(slots)}
    warmup = [encode(p) for p in fresh_prompts(text, WARMUP, 32, seed=args.seed, stop=held_out)]
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start; "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}; target {args.target}; models loaded in "
          f"{t_load:.2f} s"
          + (f" from {args.models}" if args.models else ""))
    print(f"{per_gamma} fresh prompts per gamma (32 characters of held-out text each) x {args.tokens} new tokens; "
          f"every rule runs the same prompts, each rule on a freshly loaded draft")
    print("speedup: total plain time / total speculative time over a gamma's prompts [95% bootstrap interval over\n"
          "prompts], on the process's CPU time (which other programs' load does not inflate) and on the wall clock;\n"
          "cold = each prompt generated once, after a warm-up on other text; warm = the same prompts again\n")

    costs = {}
    for i, t in enumerate(temps):
        costs[t] = c, r, one, ratio = measure_costs(load_models, target, cost_prompts[i * COST:(i + 1) * COST],
                                                    warmup, t, args.tokens, max(gammas) + 1)
        print(f"T = {t:g}, CPU time: target call {one * 1e6:.1f} us for 1 new position; r(n) = cost(n + 1 new "
              f"positions) / cost(1) for n = 1..{max(r)}: " + " ".join(f"{r[n]:.2f}" for n in sorted(r) if n) +
              f"; a draft step on unseen contexts: c = {c:.4f} ({c * one * 1e6:.2f} us)" +
              ("" if ratio is None else f"; on the same contexts a sampled step costs {ratio:.2f} greedy steps"))
    print("(wall / CPU time of the runs is 1.00 when nothing else runs)\n")
    results, runs = {}, {}
    for rule in rules:
        t, kw = temperature[rule], {"verify": rule, "width": args.width if rule == "tree" else None}
        matched = [tree_nodes(args.width, d) for d in plan[rule]] if rule == "tree" else plan[rule]
        prompts = [by_gamma[g][k] for k in range(per_gamma) for g in matched]
        draft = load_models()[0]          # fresh: it has seen none of these prompts, nor any other rule's rows
        compare(draft, target, warmup, plan[rule], args.tokens, t, **kw)   # untimed: code paths, common rows
        situ = TimedTarget(target)       # times every call of the cold runs: r in situ
        runs[rule] = cold = compare(draft, situ, prompts, plan[rule], args.tokens, t, seed=args.seed, **kw)
        warm = compare(draft, target, prompts, plan[rule], args.tokens, t, seed=args.seed, **kw)
        results[rule] = rule_table(rule, t, cold, warm, costs[t], args.width, situ)

    print("each rule at its best gamma by cold CPU speedup (warm beside it, never instead of it):")
    header = (f"{'rule':<8} {'T':>3} {'at':>16} {'pos/call':>8} {'tok/call':>17} {'cold, CPU':>17} "
              f"{'cold, wall':>17} {'warm, CPU':>9}")
    print(header)
    print("-" * len(header))
    for rule, rows in results.items():
        label, pos, e, s, w, hot = max(rows.values(), key=lambda row: row[3][0])
        print(f"{rule:<8} {temperature[rule]:>3g} {label:>16} {pos:>8.2f} {fmt_ci(e, '.2f'):>17} "
              f"{fmt_ci(s, '.2f') + 'x':>17} "
              f"{fmt_ci(w, '.2f') + 'x':>17} {hot:>8.2f}x")
    others = [rule for rule in ("block", "typical") if rule in runs]
    if "token" in runs and others:
        print(f"\ntokens per call against the token rule, T = {args.temperature:g}, on the same prompts: "
              f"difference [95% paired bootstrap interval]")
        header = f"{'gamma':>5} " + " ".join(f"{rule + ' - token':>22}" for rule in others)
        print(header)
        print("-" * len(header))
        for g in gammas:
            print(f"{g:>5} " + " ".join(f"{fmt_ci(paired(runs['token'][g], runs[rule][g]), '+.3f'):>22}"
                                        for rule in others))
        if "block" in others and 1 in gammas:   # a check of the pairing: the same seeds, the same draws
            print("(at gamma 1 block verification is the token rule draw for draw: with the same seeds, the same text)")
    if "tree" in runs and "token" in runs:
        print(f"\nat equal positions per call, T = {args.temperature:g}: the tree against the token rule's chain, "
              f"on the same prompts")
        header = (f"{'positions':>9} {'tree':>16} {'tok/call':>17} {'cold, CPU':>17} {'chain':>8} {'tok/call':>17} "
                  f"{'cold, CPU':>17} {'tok/call, tree - chain':>25}")
        print(header)
        print("-" * len(header))
        for d in plan["tree"]:
            n = tree_nodes(args.width, d)
            tl, _, te, ts, _, _ = results["tree"][d]
            cl, _, ce, cs, _, _ = results["token"][n]
            print(f"{n + 1:>9} {tl:>16} {fmt_ci(te, '.2f'):>17} {fmt_ci(ts, '.2f') + 'x':>17} "
                  f"{cl:>8} {fmt_ci(ce, '.2f'):>17} {fmt_ci(cs, '.2f') + 'x':>17} "
                  f"{fmt_ci(paired(runs['token'][n], runs['tree'][d]), '+.3f'):>25}")
    if args.drafts:
        print("\nwhere the drafts come from (the same prompts, each kind on a fresh draft; c and r timed in the runs):")
        kinds = draft_kind_tables(target, load_models, by_gamma, per_gamma, warmup, temps, args.tokens, args.seed)
        print("each draft kind at its best setting by cold CPU speedup, beside the n-gram's chain at its best gamma:")
        header = f"{'draft':<12} {'T':>3} {'setting':>18} {'alpha':>19} {'tok/call':>17} {'c':>7} {'cold, CPU':>17}"
        print(header + "\n" + "-" * len(header))
        for t in temps:
            chain = results.get("greedy" if t == 0 else "token")
            if chain:
                label, _, e, sp, _, _ = max(chain.values(), key=lambda row: row[3][0])
                print(f"{'n-gram':<12} {t:>3g} {label:>18} {'(above)':>19} "
                      f"{fmt_ci(e, '.2f'):>17} {'':>7} {fmt_ci(sp, '.2f') + 'x':>17}")
            for kind in DRAFT_KINDS:
                label, a, e, c, _, sp, _ = max(kinds[kind, t], key=lambda row: row[5][0])
                print(f"{kind:<12} {t:>3g} {label:>18} {fmt_ci(a, '.3f'):>19} {fmt_ci(e, '.2f'):>17} {c:>7.4f} "
                      f"{fmt_ci(sp, '.2f') + 'x':>17}")
    if args.contexts:
        n = 12 if args.quick else 24
        long = [encode(p) for p in fresh_prompts(text, n, 300, seed=args.seed + 2, start=held_out)]
        short = [p[-32:] for p in long]          # the same text's last 32 characters: the same continuation's task
        ctx = context_table(load_models, target, short, long, warmup, args.temperature, args.tokens, args.seed)
        print(f"\ncontext length: the token rule at T = {args.temperature:g}, gamma 5, {n} prompts each, interleaved; "
              f"prompts of 300 characters (past the 256-character window:\n"
              f"rows from later windows) and their last 32 (rows in the first window); each side from a fresh cache, "
              f"the prompt computed untimed")
        for name in ("short", "long"):
            plain, spec, toks, calls = ctx[name]
            print(f"  {name:>5}: plain {n * args.tokens / sum(plain):7.0f} tok/s, speculative "
                  f"{n * args.tokens / sum(spec):7.0f} tok/s (CPU); speedup {fmt_ci(ratio_ci(plain, spec), '.2f')}x, "
                  f"tok/call {fmt_ci(ratio_ci(toks, calls), '.2f')}")
        (pl, sl, _, _), (ps, ss, _, _) = ctx["long"], ctx["short"]
        est, lo, hi = ratio_difference_ci(ps, ss, pl, sl)   # speedup long - short, paired by round (same moment)
        base = sum(ps) / sum(ss)
        print(f"  speedup long - short: {est:+.3f} [{lo:+.3f}, {hi:+.3f}] (95% bootstrap), "
              f"{est / base:+.1%} of the short speedup [{lo / base:+.1%}, {hi / base:+.1%}]")
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    sys.exit(main())
