"""Command line: speculative generation with the shipped models.

    python -m specdec generate --prompt "The " --gamma 4 [--temperature T]
                               [--max-new-tokens N] [--seed S] [--compare]

Accepted draft tokens are shown in green and the target's corrections or
bonus tokens in red when stdout is a terminal; otherwise every target token
is put in [brackets] (so piping to a file keeps the distinction).
"""

import argparse
import os
import sys
import time

GREEN, RED, RESET = "\033[32m", "\033[31m", "\033[0m"


def render(text_of, tokens, from_draft, colour):
    """The generated text with target tokens marked: red (colour) or [brackets] (plain)."""
    out = []
    for tok, ok in zip(tokens, from_draft):
        ch = text_of([tok])
        if colour:
            out.append((GREEN if ok else RED) + ch + RESET)
        else:
            out.append(ch if ok else f"[{ch}]")
    return "".join(out)


def generate(args):
    from .decode import autoregressive_generate, speculative_generate
    from .models import load_pretrained
    from .theory import expected_tokens_per_step

    draft, target = load_pretrained()
    prompt = target.encode(args.prompt)
    # Warm-up, untimed: one full run of each, so both timings below are steady-state. Cold, the
    # draft builds every row, argmax and tempered CDF it visits on first use (tens of us each).
    speculative_generate(draft, target, prompt, args.max_new_tokens, args.gamma, args.temperature, args.seed)
    if args.compare:
        autoregressive_generate(target, prompt, args.max_new_tokens, args.temperature, args.seed)
    t0 = time.perf_counter()
    res = speculative_generate(draft, target, prompt, args.max_new_tokens, args.gamma, args.temperature, args.seed)
    t_spec = time.perf_counter() - t0
    colour = sys.stdout.isatty()
    print(args.prompt + render(target.decode, res.tokens, res.from_draft, colour))
    print()
    legend = f"{GREEN}accepted draft{RESET}, {RED}target correction/bonus{RESET}" if colour else \
        "plain = accepted draft, [x] = target correction/bonus"
    print(f"legend: {legend}")
    alpha = res.alpha
    print(f"gamma {args.gamma}, temperature {args.temperature}: {len(res.tokens)} tokens, "
          f"{res.target_calls} target calls, {res.draft_calls} draft calls")
    print(f"measured alpha {alpha:.3f}; tokens per target call {res.tokens_per_call:.3f} "
          f"(theory at measured alpha: {expected_tokens_per_step(min(max(alpha, 0.0), 1.0), args.gamma):.3f})")
    print(f"speculative: {t_spec * 1000:.1f} ms (second run: caches warm)")
    if args.compare:
        t0 = time.perf_counter()
        plain = autoregressive_generate(target, prompt, args.max_new_tokens, args.temperature, args.seed)
        t_plain = time.perf_counter() - t0
        print(f"plain:       {t_plain * 1000:.1f} ms  (speedup {t_plain / t_spec:.2f}x)")
        if args.temperature == 0:
            print(f"identical to plain greedy decoding: {plain == res.tokens}")
        else:
            print("plain sample: " + args.prompt + target.decode(plain))
    return 0


def main(argv=None):
    # One BLAS thread unless told otherwise: on a small shared machine a threaded product over a
    # few positions waits for a busy core. Set here, before `generate` first imports NumPy.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = argparse.ArgumentParser(prog="python -m specdec", description="speculative decoding, end to end")
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="generate text with the shipped draft (n-gram) and target (MLP)")
    g.add_argument("--prompt", required=True)
    g.add_argument("--gamma", type=int, default=4, help="draft length (K in the graded problem)")
    g.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    g.add_argument("--max-new-tokens", type=int, default=200)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--compare", action="store_true", help="also run plain decoding and compare times")
    args = parser.parse_args(argv)
    if args.gamma < 0:
        parser.error(f"--gamma is {args.gamma}, it must be >= 0")
    if args.temperature < 0:
        parser.error(f"--temperature is {args.temperature}, it must be >= 0")
    if args.max_new_tokens < 0:
        parser.error(f"--max-new-tokens is {args.max_new_tokens}, it must be >= 0")
    return generate(args)


if __name__ == "__main__":
    sys.exit(main())
