"""Command line: speculative generation with the shipped models.

    python -m specdec generate --prompt "The " --gamma 4 --compare

`--verify` picks the verification rule (`specdec.generation.decode`): token (the default),
block, greedy (temperature 0 only), typical (Medusa's; not lossless), tree
(`--width` children per node, `--gamma` levels deep) or typical_tree (Medusa's rule on
that tree; not lossless). `--gamma auto` chooses each step's gamma from alpha and the
costs the generation measures as it runs (`specdec.generation.adaptive`). `--draft`
picks where the drafts come from (lesson 13): the distilled n-gram (the default),
prompt lookup, the Medusa heads on the target's hidden states, or an early exit
through the target's first 3 blocks.

Accepted draft tokens are shown in green and the target's corrections or
bonus tokens in red, underlined, when stdout is a terminal (and NO_COLOR is not set);
otherwise every target token is put in [brackets], so a file keeps the
distinction. `--compare` also runs plain decoding and times both, honestly:
after an untimed warm-up on other text, each side generates this prompt once,
a text the draft has not seen in this process (see `specdec.generation.measure`).

Exit codes: 0 done; 2 a bad argument (one line under the command's usage);
1 a failure while generating, or stdout closed early (`| head`), which, as
Python's documentation recommends for a broken pipe, ends quietly.
"""

import argparse
import math
import os
import sys
import time

from ._checks import shown
from .theory import MAX_GAMMA   # plain Python: no NumPy until `generate` runs

GREEN, RED, RESET = "\033[32m", "\033[31;4m", "\033[0m"   # target tokens: red and underlined
# The untimed warm-up runs on this text, never on the user's prompt (no row of it gets cached).
WARMUP_PROMPT = "Assignment statements are used to (re)bind names to values"
EXAMPLE = 'example:\n  python -m specdec generate --prompt "The assert statement " --gamma 4 --compare'
RULES = ("token", "block", "greedy", "typical", "tree", "typical_tree")   # speculative_generate's verify= choices
TREE_RULES = ("tree", "typical_tree")
DRAFTS = ("ngram", "lookup", "heads", "early-exit")   # where the drafts come from (make_draft)
EARLY_EXIT_BLOCKS = 3       # --draft early-exit: the target's first 3 of 4 blocks
TREE_WIDTH = 2              # --width when not given (speculative_generate's default too)
MAX_TREE_NODES = 1024       # width + width^2 + ... + width^gamma: a tree's nodes per target call
TARGETS = ("transformer", "mlp")   # models.load_pretrained's target= choices
MAX_NEW_TOKENS = 100_000    # minutes of generation on a laptop CPU; far more than a terminal shows


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


def gamma_value(text):
    """--gamma's type: an int, or the word auto."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid gamma: {text!r} (an int >= 0, or auto)") from None


def make_draft(name, ngram, target):
    """The draft --draft names, over the loaded n-gram and target."""
    if name == "ngram":
        return ngram
    if name == "lookup":
        from .models.lookup import PromptLookupDraft
        return PromptLookupDraft(target.V)
    if name == "heads":
        from .models.heads import HeadsDraft, load_heads
        return HeadsDraft(target, load_heads())
    from .models.early_exit import EarlyExitDraft
    return EarlyExitDraft(target, EARLY_EXIT_BLOCKS)


def generate(args):
    from .generation.decode import autoregressive_generate, speculative_generate
    from .generation.measure import fresh_cache
    from .models import load_pretrained
    from .theory import expected_tokens_per_step

    ngram, target = load_pretrained(target=args.target)
    draft = make_draft(args.draft, ngram, target)
    prompt = target.encode(args.prompt)
    run = (args.max_new_tokens, args.gamma, args.temperature, args.seed)
    width = TREE_WIDTH if args.width is None else args.width    # passed on, so the width shown is the one used
    rule = {"verify": args.verify, "width": width} if args.verify in TREE_RULES else {"verify": args.verify}
    if args.compare:   # untimed: first allocations and code paths, on other text
        warm = target.encode(WARMUP_PROMPT)
        speculative_generate(draft, target, warm, min(args.max_new_tokens, 50), *run[1:], **rule)
        autoregressive_generate(target, warm, min(args.max_new_tokens, 50), args.temperature, args.seed)
        fresh_cache(target)
        t0, c0 = time.perf_counter(), time.process_time()
        plain = autoregressive_generate(target, prompt, args.max_new_tokens, args.temperature, args.seed)
        t_plain, c_plain = time.perf_counter() - t0, time.process_time() - c0
        fresh_cache(target)                      # the speculative side must not find plain's cache of the prompt
    t0, c0 = time.perf_counter(), time.process_time()
    res = speculative_generate(draft, target, prompt, *run, **rule)
    t_spec, c_spec = time.perf_counter() - t0, time.process_time() - c0

    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    print(args.prompt + render(target.decode, res.tokens, res.from_draft, colour))
    print()
    legend = f"{GREEN}accepted draft{RESET}, {RED}target correction/bonus{RESET}" if colour else \
        "plain = accepted draft, [x] = target correction/bonus"
    print(f"legend: {legend}")
    if args.verify in TREE_RULES:
        shape = f"width {width}, gamma {args.gamma} (the tree's depth)"
    elif args.gamma == "auto":
        used = sorted(res.drafted)
        shape = "gamma auto" + (f" (chosen per step: median {used[len(used) // 2]}, {used[0]} to {used[-1]})"
                                if used else "")
    else:
        shape = f"gamma {args.gamma}"
    print(f"verify {args.verify}, draft {args.draft}, {shape}, temperature {args.temperature:g}: {len(res.tokens)} "
          f"tokens, {res.target_calls} target calls, {res.draft_calls} draft calls")
    if math.isnan(res.alpha):
        print("measured alpha: none (no draft was tested: gamma 0, no match found or no tokens)")
    else:   # theory at each call's own draft length (a lookup or an auto step may draft fewer than gamma)
        theory = sum(expected_tokens_per_step(res.alpha, d) for d in res.drafted) / len(res.drafted)
        print(f"measured alpha {res.alpha:.3f}; tokens per target call {res.tokens_per_call:.3f} "
              f"(theory at measured alpha: {theory:.3f})")
    if args.compare:
        print("timing, cold (this prompt is new to the process; one run each after a warm-up on other text):")
        print(f"  {'':<13}{'wall clock':>13} {'CPU time':>13}")
        for name, t, c in [("plain", t_plain, c_plain), ("speculative", t_spec, c_spec)]:
            print(f"  {name + ':':<13}{t * 1000:>10.1f} ms {c * 1000:>10.1f} ms")
        print(f"  {'speedup:':<13}{t_plain / t_spec:>12.2f}x {c_plain / max(c_spec, 1e-9):>12.2f}x")
        print("  (one run is noisy: benchmarks/bench_generate.py gives intervals over many prompts)")
        if args.temperature == 0:
            print(f"identical to plain greedy decoding: {plain == res.tokens}")
        elif args.verify == "typical":
            print(f"plain decoding drew {len(plain)} tokens (not shown); typical acceptance is not lossless: "
                  "its text is not distributed as the target's")
        else:
            print(f"plain decoding drew {len(plain)} tokens: another sample of the same distribution (not shown)")


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults after every option's help, and the example in the epilog kept as written.

    An option whose default is None (it depends on another option) states its default in its own help.
    """

    def _get_help_string(self, action):
        return action.help if action.default is None else super()._get_help_string(action)


def parser():
    """(the top-level parser, the `generate` subparser): errors about its options go under its usage."""
    top = argparse.ArgumentParser(prog="python -m specdec", description="Speculative decoding, end to end.",
                                  epilog=EXAMPLE, formatter_class=_Formatter)
    sub = top.add_subparsers(dest="command", required=True, metavar="command")
    g = sub.add_parser("generate", help="generate text with the shipped draft (n-gram) and target (transformer)",
                       description="Generate text by speculative decoding with the shipped models, marking\n"
                                   "which tokens the draft proposed and the target accepted.",
                       epilog=EXAMPLE, formatter_class=_Formatter)
    g.add_argument("--prompt", metavar="TEXT", default="The ", help="text to continue (default: %(default)r)")
    g.add_argument("--gamma", metavar="G", type=gamma_value, default=4,
                   help="draft length: tokens the draft proposes per target call (K in the graded problem), "
                        "or auto: chosen per step from alpha and the call costs measured as it runs")
    g.add_argument("--temperature", metavar="T", type=float, default=0.0,
                   help="sampling temperature; 0 = greedy (the output then equals the target's greedy text)")
    g.add_argument("--max-new-tokens", metavar="N", type=int, default=200, help="tokens to generate")
    g.add_argument("--seed", metavar="S", type=int, default=0, help="random seed for sampling (temperature > 0)")
    g.add_argument("--verify", choices=RULES, default="token",
                   help="verification rule; greedy needs temperature 0, typical and typical_tree are not "
                        "lossless, tree and typical_tree draft --width children per node, --gamma levels deep")
    g.add_argument("--width", metavar="W", type=int, default=None,
                   help=f"children per node of the draft tree; only with --verify tree or typical_tree "
                        f"(default: {TREE_WIDTH})")
    g.add_argument("--draft", choices=DRAFTS, default="ngram",
                   help="where the drafts come from: the distilled n-gram, prompt lookup, Medusa heads on the "
                        "target's hidden states, or an early exit (heads and early-exit need the transformer)")
    g.add_argument("--target", choices=TARGETS, default="transformer",
                   help="the target model: the transformer with its KV cache, or the small MLP")
    g.add_argument("--compare", action="store_true",
                   help="also run plain decoding, and time both on this prompt (cold: new to the process)")
    return top, g


def check(args, g):
    """Range checks argparse's types cannot make; g.error prints g's usage and one line, exit 2."""
    numbers = [name for name in ("gamma", "max_new_tokens", "seed") if getattr(args, name) != "auto"]
    for name in numbers:
        if getattr(args, name) < 0:
            g.error(f"--{name.replace('_', '-')} is {getattr(args, name)}, it must be >= 0")
    # Subtle: refused here, not after a long run: the report's theory line takes gamma <= MAX_GAMMA, and
    # a huge --max-new-tokens would generate for hours before printing anything.
    for name, most in (("gamma", MAX_GAMMA), ("max_new_tokens", MAX_NEW_TOKENS)):
        if name in numbers and getattr(args, name) > most:
            g.error(f"--{name.replace('_', '-')} is {shown(getattr(args, name))}, it must be at most {most}")
    if not 0 <= args.temperature < math.inf:      # also refuses nan
        g.error(f"--temperature is {args.temperature}, it must be a finite number >= 0")
    if args.verify == "greedy" and args.temperature != 0:
        g.error(f"--verify greedy decodes at temperature 0, got --temperature {args.temperature:g}")
    if args.width is not None and args.verify not in TREE_RULES:
        g.error(f"--width is an option of --verify tree, not of --verify {args.verify}")
    if args.gamma == "auto" and args.verify in TREE_RULES:
        g.error(f"--gamma auto chooses a chain's length; --verify {args.verify} needs the tree's depth")
    if args.draft in ("heads", "early-exit") and args.target != "transformer":
        g.error(f"--draft {args.draft} reads the transformer's own computation: it needs --target transformer")
    if args.draft == "lookup" and args.verify in TREE_RULES:
        g.error(f"--draft lookup proposes one chain: it cannot draft a tree for --verify {args.verify}")
    if args.verify in TREE_RULES:
        width = TREE_WIDTH if args.width is None else args.width
        if width < 1:
            g.error(f"--width is {width}, it must be >= 1")
        # Subtle: a tree has width + ... + width^depth nodes; a big one would hang, so refuse it. The depth is
        # gamma, or less when fewer tokens remain (the loop never drafts past the end).
        depth, nodes, level = min(args.gamma, max(args.max_new_tokens - 1, 0)), 0, 1
        for _ in range(depth):
            level *= width
            nodes += level
            if nodes > MAX_TREE_NODES:
                g.error(f"--width {width} and --gamma {args.gamma} make a tree of more than {MAX_TREE_NODES} "
                        "nodes per target call")


def main(argv=None):
    # One BLAS thread unless told otherwise: on a small shared machine a threaded product over a few
    # positions waits for a busy core. Set here, before `generate` first imports NumPy.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if hasattr(sys.stdout, "reconfigure"):     # a terminal or pipe that cannot encode a character: escape it
        sys.stdout.reconfigure(errors="backslashreplace")
    top, g = parser()
    args, extra = top.parse_known_args(argv)   # a bad argument: usage + one line, exit 2
    if extra:   # unknown options reach the top parser; report them under the command's own usage
        g.error(f"unrecognized arguments: {' '.join(extra)}")
    check(args, g)
    try:
        generate(args)
        sys.stdout.flush()                     # inside the try: a closed pipe surfaces here, not at exit
    except BrokenPipeError:
        # Python's documented recipe: point stdout at devnull so the interpreter's final flush is silent.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:                   # no traceback for a user; SPECDEC_DEBUG=1 shows it
        if os.environ.get("SPECDEC_DEBUG"):
            raise
        print(f"python -m specdec {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
