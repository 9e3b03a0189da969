"""`python -m specdec`, run as a user runs it: a subprocess per row of a table of arguments.

Whatever the arguments, no traceback may reach stderr, and the exit code says what happened:
0 done, 2 a bad argument (the command's usage, then one error line), 1 stdout closed early.
The independent references for the generated text: greedy decoding itself at temperature 0, and the
library's speculative_generate with the same rule, options and seed when sampling.
"""

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import ROOT
from specdec.generation.decode import autoregressive_generate

GENERATE_USAGE = "usage: python -m specdec generate"
# Every test runs `python -m specdec` as a subprocess, and the module's first test starts them all (below): slow.
pytestmark = pytest.mark.slow



@pytest.fixture(scope="module")
def models():
    """The pair the command line runs by default: the shipped draft and the transformer target."""
    from specdec.models import load_pretrained
    return load_pretrained()

def _run(args):
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "specdec", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)


_POOL = ThreadPoolExecutor(max_workers=4)   # each run is a process of its own: start them all at once
_RUNS = {}


def run(*args):
    """The finished process for these arguments (started by `_start_every_row`, or now)."""
    if args not in _RUNS:
        _RUNS[args] = _POOL.submit(_run, args)
    return _RUNS[args].result()


def no_traceback(out):
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr


# ---------------------------------------------------------------- good arguments: exit 0 and the right output
GOOD = [
    # greedy with timing: the text is the target's own greedy text
    (["--prompt", "The ", "--gamma", "3", "--max-new-tokens", "30", "--compare"],
     ["identical to plain greedy decoding: True", "plain:", "speculative:", "speedup"]),
    # gamma 0 drafts nothing, so alpha is undefined: said in words, not a nan traceback
    (["--gamma", "0", "--max-new-tokens", "12", "--compare"],
     ["measured alpha: none", "0 draft calls", "identical to plain greedy decoding: True"]),
    # sampling: statistics only, never the plain sample's text
    (["--temperature", "0.8", "--max-new-tokens", "25", "--seed", "3", "--compare"],
     ["temperature 0.8", "another sample of the same distribution (not shown)"]),
    # nothing to generate; an empty prompt with characters outside the vocabulary
    (["--max-new-tokens", "0"], ["0 tokens, 0 target calls", "measured alpha: none"]),
    (["--prompt", "", "--max-new-tokens", "5", "--gamma", "9"], ["5 tokens"]),
    (["--prompt", "\u00e9\u2603\n", "--max-new-tokens", "5"], ["5 tokens"]),
    # every rule at T = 0 is greedy decoding (a tree drafts the top `width` ids of q)
    (["--verify", "greedy", "--gamma", "5", "--max-new-tokens", "30", "--compare"],
     ["verify greedy, draft ngram, gamma 5", "identical to plain greedy decoding: True"]),
    # the node limit counts only the levels that fit in the tokens asked for: depth 12 is 5 here (363 nodes)
    (["--verify", "tree", "--width", "3", "--gamma", "12", "--max-new-tokens", "6", "--compare"],
     ["verify tree, draft ngram, width 3, gamma 12 (the tree's depth)", "6 tokens",
      "identical to plain greedy decoding: True"]),
    # typical acceptance at T > 0 is not the target's distribution: the output says so, not "the same distribution"
    (["--verify", "typical", "--temperature", "1", "--max-new-tokens", "20", "--compare"],
     ["verify typical", "typical acceptance is not lossless"]),
    # gamma chosen per step; each draft kind at T = 0 is greedy decoding
    (["--gamma", "auto", "--max-new-tokens", "60", "--compare"],
     ["gamma auto (chosen per step: median", "identical to plain greedy decoding: True"]),
    (["--draft", "lookup", "--max-new-tokens", "40", "--compare"],
     ["draft lookup", "identical to plain greedy decoding: True"]),
    (["--draft", "heads", "--verify", "tree", "--width", "3", "--gamma", "3", "--max-new-tokens", "40",
      "--compare"], ["draft heads", "identical to plain greedy decoding: True"]),
    (["--draft", "early-exit", "--temperature", "1", "--max-new-tokens", "20"], ["draft early-exit", "20 tokens"]),
]


HELP = [("--help",), ("generate", "--help")]
BAD = [
    (["--gamma", "-2"], "--gamma is -2, it must be >= 0"),
    (["--gamma", "x"], "argument --gamma: invalid gamma: 'x' (an int >= 0, or auto)"),
    (["--gamma", "auto", "--verify", "tree"],
     "--gamma auto chooses a chain's length; --verify tree needs the tree's depth"),
    (["--draft", "heads", "--target", "mlp"],
     "--draft heads reads the transformer's own computation: it needs --target transformer"),
    (["--draft", "lookup", "--verify", "tree"],
     "--draft lookup proposes one chain: it cannot draft a tree for --verify tree"),
    (["--gamma"], "argument --gamma: expected one argument"),
    (["--max-new-tokens", "-5"], "--max-new-tokens is -5, it must be >= 0"),
    (["--seed", "-1"], "--seed is -1, it must be >= 0"),
    (["--temperature", "-0.5"], "--temperature is -0.5, it must be a finite number >= 0"),
    (["--temperature", "nan"], "--temperature is nan, it must be a finite number >= 0"),
    (["--temperature", "inf"], "--temperature is inf, it must be a finite number >= 0"),
    (["--bogus", "1"], "unrecognized arguments: --bogus 1"),
    (["--verify"], "argument --verify: expected one argument"),
    (["--verify", "bogus"], "argument --verify: invalid choice: 'bogus' (choose from ..."),   # its tail: Python's
    (["--width", "3"], "--width is an option of --verify tree, not of --verify token"),
    (["--verify", "block", "--width", "2"], "--width is an option of --verify tree, not of --verify block"),
    (["--verify", "greedy", "--temperature", "0.7"], "--verify greedy decodes at temperature 0, got --temperature 0.7"),
    (["--verify", "tree", "--width", "0"], "--width is 0, it must be >= 1"),
    (["--verify", "tree", "--width", "-3"], "--width is -3, it must be >= 1"),
    (["--verify", "tree", "--width", "x"], "argument --width: invalid int value: 'x'"),
    # 40 + 40^2 = 1640 nodes; width 2 at depth 10 already has 2046 (a tree that would hang is refused)
    (["--verify", "tree", "--width", "40", "--gamma", "2"],
     "--width 40 and --gamma 2 make a tree of more than 1024 nodes per target call"),
    (["--verify", "tree", "--gamma", "12"],
     "--width 2 and --gamma 12 make a tree of more than 1024 nodes per target call"),
]
BAD_COMMAND = [([], "the following arguments are required: command"), (["frobnicate"], "invalid choice: 'frobnicate'")]
GREEDY = ("generate", "--prompt", "If the ", "--gamma", "5", "--max-new-tokens", "40")
# sampled runs with options: the CLI must pass --verify, --width and --seed through to speculative_generate
SAMPLED = [("block", None, 4), ("tree", 3, 2)]


def sampled_args(verify, width, gamma):
    return ("generate", "--prompt", "If the ", "--temperature", "1", "--seed", "5", "--max-new-tokens", "30",
            "--gamma", str(gamma), "--verify", verify, *(() if width is None else ("--width", str(width))))


@pytest.fixture(scope="module", autouse=True)
def _start_every_row():
    # all rows' processes start when the module's first test runs, four at a time; each test waits for its own
    for args in ([("generate", *a) for a, _ in GOOD] + HELP + [("generate", *a) for a, _ in BAD]
                 + [tuple(a) for a, _ in BAD_COMMAND] + [GREEDY] + [sampled_args(*row) for row in SAMPLED]):
        if args not in _RUNS:
            _RUNS[args] = _POOL.submit(_run, args)


@pytest.mark.parametrize("args, expected", GOOD)
def test_good_arguments(args, expected):
    out = run("generate", *args)
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    for text in expected:
        assert text in out.stdout, (text, out.stdout)
    assert "\033[" not in out.stdout                     # not a terminal: brackets, no colour codes


def test_greedy_text_is_greedy_decoding(models):
    from specdec.generation.decode import autoregressive_generate
    _, target = models
    out = run(*GREEDY)
    marked = out.stdout.split("\n\nlegend:")[0]          # target tokens are shown as [x]
    expected = "If the " + target.decode(autoregressive_generate(target, target.encode("If the "), 40))
    assert re.sub(r"\[(.)\]", r"\1", marked, flags=re.S) == expected


@pytest.mark.parametrize("verify, width, gamma", SAMPLED)
def test_sampled_text_and_marks_are_speculative_generates(models, verify, width, gamma):
    # the reference: the library called with the same options and seed; every target token is shown as [x]
    from specdec.generation.decode import speculative_generate
    draft, target = models
    res = speculative_generate(draft, target, target.encode("If the "), 30, gamma, 1.0, 5, verify=verify,
                               **({} if width is None else {"width": width}))
    out = run(*sampled_args(verify, width, gamma))
    no_traceback(out)
    shown = "".join(target.decode([t]) if ok else f"[{target.decode([t])}]"
                    for t, ok in zip(res.tokens, res.from_draft))
    assert out.stdout.split("\n\nlegend:")[0] == "If the " + shown
    assert f"{res.target_calls} target calls, {res.draft_calls} draft calls" in out.stdout


@pytest.mark.parametrize("args", HELP)
def test_help_shows_defaults_and_an_example(args):
    out = run(*args)
    assert out.returncode == 0 and out.stderr == ""
    assert 'example:\n  python -m specdec generate --prompt "The assert statement " --gamma 4 --compare' in out.stdout
    if args[0] == "generate":   # every option's default, the prompt's quoted (it ends in a space)
        options = re.split(r"\n  (?=-)", out.stdout.split("options:")[1].split("example:")[0])[1:]
        defaults = {o.split()[0]: " ".join(o.split()).split("(default: ")[-1][:-1] for o in options[1:]}  # not -h
        assert defaults == {"--prompt": "'The '", "--gamma": "4", "--temperature": "0.0", "--max-new-tokens": "200",
                            "--seed": "0", "--verify": "token", "--width": "2", "--draft": "ngram",
                            "--target": "transformer", "--compare": "False"}


# ---------------------------------------------------------------- bad arguments: exit 2, usage + one line
@pytest.mark.parametrize("args, message", BAD)
def test_a_bad_argument_is_one_line_under_the_commands_usage(args, message):
    out = run("generate", *args)
    no_traceback(out)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().split("\n")
    assert lines[0].startswith(GENERATE_USAGE)                    # the subcommand's usage, not the top level's
    if message.endswith("..."):   # the rest of the line is Python's wording, which changes between versions
        assert lines[-1].startswith(f"python -m specdec generate: error: {message[:-3]}")
    else:
        assert lines[-1] == f"python -m specdec generate: error: {message}"
    assert all(line.startswith(" ") for line in lines[1:-1])      # the rest is the usage, wrapped


@pytest.mark.parametrize("args, message", BAD_COMMAND)
def test_a_bad_command_is_one_line_under_the_top_usage(args, message):
    out = run(*args)
    no_traceback(out)
    assert out.returncode == 2 and out.stderr.startswith("usage: python -m specdec [-h]")
    assert message in out.stderr.strip().split("\n")[-1]


# ---------------------------------------------------------------- a reader that stops early (| head)
def test_a_closed_pipe_ends_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "specdec", "generate", "--max-new-tokens", "300", "--compare"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.close()                                  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert err == "", err                                # no BrokenPipeError, no "Exception ignored"


@pytest.mark.parametrize("argv, message", [
    (["--gamma", "10001"], "--gamma is 10001, it must be at most 10000"),
    (["--gamma", "9" * 30], "--gamma is an int of 30 digits, it must be at most 10000"),
    (["--max-new-tokens", "100001"], "--max-new-tokens is 100001, it must be at most 100000"),
])
def test_cli_refuses_out_of_range_numbers_before_generating(argv, message):
    """Before: --gamma 10**25 generated 200 tokens, printed them, then failed in the report (exit 1);
    a huge --max-new-tokens ran for hours. Now: exit 2, nothing on stdout, one error line, no traceback."""
    run = subprocess.run([sys.executable, "-m", "specdec", "generate", *argv], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and run.stdout == "" and "Traceback" not in run.stderr
    assert run.stderr.splitlines()[-1] == f"python -m specdec generate: error: {message}"


def run_cli(*args):
    out = subprocess.run([sys.executable, "-m", "specdec", "generate", *args], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_cli_greedy_compare(models):
    _, target = models
    out = run_cli("--prompt", "The ", "--gamma", "3", "--max-new-tokens", "40", "--compare")
    expected = "The " + target.decode(autoregressive_generate(target, target.encode("The "), 40))
    marked = out.split("\n\nlegend:")[0]
    assert "\033[" not in out                                # not a terminal: brackets, no colour codes
    assert re.sub(r"\[(.)\]", r"\1", marked, flags=re.S) == expected
    assert "identical to plain greedy decoding: True" in out
    assert re.search(r"measured alpha \d\.\d{3}", out) and "target calls" in out and "plain:" in out


def test_cli_rejects_negative_gamma():
    out = subprocess.run([sys.executable, "-m", "specdec", "generate", "--prompt", "x", "--gamma", "-1"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and "--gamma is -1" in out.stderr
