"""Helpers shared by the test files, imported as `from helpers import ...` (pyproject.toml puts tests/ on sys.path).

A helper module, not a test file (its doctests run). Fixtures live in tests/conftest.py; independent reference
implementations of the rules in tests/references.py.

The library's tests:
- `GRADED_EXAMPLES`: the graded problem's three examples, verbatim (their statement is in
  exercises/ex01_verify/README.md);
- `max_z(samples, probs)` and `Z_MAX`: the per-bin z-score that every fixed-seed statistical test uses, and
  `worst_z(counts, exact, n_runs)`, the same on counts of outcomes against an exact law;
- `FixedRandom(u)` and `Scripted(values)`: a `random.Random` whose uniforms the test chooses, for
  hand-checkable sampler decisions; `inverse_cdf_point(row, y)`, a uniform that draws y.

The grader's tests:
- `ROOT`, `SUBS` (tests/submissions: hostile, broken, wrong and good submissions, graded, never imported);
- `NEEDS_BWRAP` (skip, saying why, where bubblewrap cannot sandbox) and `MODE` (bwrap where it can, else
  the process fallback);
- `load(path)`: a file imported as a module; `cli(capsys, *args)`: `python -m specdec.grade ARGS` in this
  process; `alive_with(token)`: live processes whose command line holds `token`.
"""

import importlib.util
import math
import os
import random

import numpy as np
import pytest

from grader.sandbox import bwrap_problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions")
NEEDS_BWRAP = pytest.mark.skipif(bool(bwrap_problem()), reason=f"no sandbox here: {bwrap_problem()}")
MODE = "bwrap" if not bwrap_problem() else "process"


# ---- the library's tests --------------------------------------------------------------------------------------
# The graded problem's examples: (title, (draft_tokens, draft_probs, target_probs, random_samples), expected).
# Example 2's title is wrong and its expected output right (tests/library/test_verify.py works through why);
# example 3 expects a ValueError.
GRADED_EXAMPLES = [
    ("All tokens accepted with bonus token",
     ([2, 1], [[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]], [[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], [0.5, 0.4]),
     {"accepted_tokens": [2, 1], "bonus_token": 0, "acceptance_count": 2}),
    ("Second token rejected with resample",
     ([0, 1], [[0.8, 0.2], [0.9, 0.1]], [[0.9, 0.1], [0.1, 0.9]], [0.5, 0.8]),
     {"accepted_tokens": [0, 1], "bonus_token": None, "acceptance_count": 2}),
    ("Input length mismatch error",
     ([0], [[0.5, 0.5]], [[0.5, 0.5]], [0.1, 0.2]),
     ValueError),
]

# Per-bin z-score tolerance of every statistical test. Under a correct sampler each bin's z is about N(0, 1),
# so |z| > 4.5 has probability ~7e-6 per bin; the seeds are fixed, so outcomes are reproducible anyway.
Z_MAX = 4.5


def max_z(samples, probs):
    """Largest per-bin |count - n p| / sqrt(n p (1 - p)) of integer `samples` against `probs`.

    A bin with probability 0 or 1 has no spread: any deviation there is infinitely unlikely (inf).

    >>> max_z([0, 0, 1, 1], [0.5, 0.5, 0.0])
    0.0
    >>> max_z([0, 2], [0.5, 0.5, 0.0])
    inf
    """
    samples = np.asarray(samples, dtype=np.int64)
    n = len(samples)
    counts = np.bincount(samples, minlength=len(probs))
    if len(counts) > len(probs):
        return math.inf  # a sample outside the support
    worst = 0.0
    for count, pr in zip(counts.tolist(), probs):
        if pr in (0.0, 1.0):
            if count != n * pr:
                return math.inf
            continue
        worst = max(worst, abs(count - n * pr) / math.sqrt(n * pr * (1.0 - pr)))
    return worst


def worst_z(counts, exact, n_runs):
    """The largest |count - N pi| / sqrt(N pi (1 - pi)) over outcomes; inf if an outcome of probability 0 occurred.

    `counts` maps outcomes to how often they occurred in `n_runs` runs, `exact` to their probabilities.

    >>> worst_z({"a": 50, "b": 50}, {"a": 0.5, "b": 0.5}, 100)
    0.0
    >>> worst_z({"a": 99, "c": 1}, {"a": 1.0}, 100)
    inf
    """
    worst = 0.0
    for key in set(counts) | set(exact):
        pi, c = float(exact.get(key, 0)), counts.get(key, 0)
        if pi == 0:
            worst = max(worst, math.inf if c else 0.0)
        elif pi < 1:
            worst = max(worst, abs(c - n_runs * pi) / math.sqrt(n_runs * pi * (1 - pi)))
    return worst


class FixedRandom(random.Random):
    """A Random whose every uniform is `u`: makes a sampler's decisions hand-checkable."""

    def __init__(self, u):
        super().__init__(0)
        self.u = u

    def random(self):
        return self.u


class Scripted(random.Random):
    """A generator whose random() returns the test's values, in order."""

    def __init__(self, values):
        super().__init__(0)
        self.values = list(values)

    def random(self):
        return self.values.pop(0)


def inverse_cdf_point(row, y):
    """A uniform u whose inverse-CDF draw from `row` is y: the middle of y's interval.

    >>> inverse_cdf_point([0.25, 0.5, 0.25], 1)
    0.5
    """
    below = sum(row[:y])
    return float(below + row[y] / 2)


# ---- the grader's tests ---------------------------------------------------------------------------------------
def load(path):
    """The Python file at `path`, imported as a module named after it (without registering it in sys.modules)."""
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli(capsys, *args):
    """(exit code, stdout, stderr) of `python -m specdec.grade ARGS`, run in this process."""
    from grader.cli import main
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def alive_with(token):
    """Pids of live processes whose command line holds `token`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def ex01_argument_checks(draft_tokens, draft_probs, target_probs, random_samples):
    """The checks ex01's statement asks for (lengths, rows that are distributions naming the row, token ids in the
    vocabulary, q(x) > 0), as a learner writes them: the test files' hand-made ex01 functions share them and differ
    only in their walk."""
    k = len(draft_tokens)
    if len(draft_probs) != k or len(random_samples) != k or len(target_probs) < k:
        raise ValueError("lengths do not match")
    for name, rows in (("target_probs", target_probs), ("draft_probs", draft_probs)):
        for i, row in enumerate(rows):
            if min(row) < 0 or abs(sum(row) - 1) > 1e-4:
                raise ValueError(f"{name}[{i}] is not a distribution")
    if any(not 0 <= x < len(row) for x, row in zip(draft_tokens, draft_probs)):
        raise ValueError("a drafted token id is outside the vocabulary")
    if any(row[x] == 0 for x, row in zip(draft_tokens, draft_probs)):
        raise ValueError("a drafted token has q(x) = 0")

