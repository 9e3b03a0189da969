"""Several drafts against plain decoding on the same prompts, interleaved, with c and r timed in the runs.

`measure.compare` times one speculative setup against plain decoding. A lesson
that asks which draft wins runs several setups ("arms") on the SAME prompts, so
their differences are paired, and interleaves them so that a burst of load hits
all alike: round i runs every arm on prompt i, in an order that rotates from round
to round, each arm as `compare` does (plain and speculative back to back, the side
that goes first alternating, each from a fresh KV cache). Each arm wraps its target
in a `measure.TimedTarget` and its draft in a `TimedDraft`, so the cost ratios of
theory(c, r) come from the very runs compared:

- c: the draft's CPU seconds per id it drafted (per node, for a tree) over the
  mean one-position target call (plain decoding's calls, the fills of the next
  window's cache among them: what a plain token costs);
- r: the arm's mean verification call (its calls of 2 to 64 positions: the first
  call of a generation, which computes the prompt, left out) over that same call.

Then theory(c, r) = E / (r + d c), with d the ids drafted per call and E tokens per
call: E(alpha, d) for a chain (lesson 06's formula at the measured alpha), the
measured tokens per call for a tree (the formula does not describe trees).

    >>> from specdec.models import load_pretrained
    >>> draft, target = load_pretrained(target="mlp")
    >>> prompts = [target.encode("The "), target.encode("If the ")]
    >>> out = race(target, [Arm("n-gram", lambda: draft, gamma=3)], prompts, 20)
    >>> res = out["n-gram"]
    >>> len(res.comparison.tokens), res.comparison.tokens_per_call()[0] > 1, res.c > 0
    (2, True, True)
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ..theory import expected_tokens_per_step
from .measure import Comparison, TimedTarget, compare
from .trees import full_tree


class TimedDraft:
    """A draft that times its own work (CPU) and counts the ids (a tree's nodes) it drafted; every draft
    interface it has (`propose`, `argmax_next`, `next_token_probs`, `chain`, `tree`) passes through."""

    def __init__(self, draft):
        self.draft, self.V, self.seconds, self.drafted = draft, draft.V, 0.0, 0
        for name in ("chain", "tree", "propose", "argmax_next", "next_token_probs"):
            if hasattr(draft, name):
                setattr(self, name, self._timed(getattr(draft, name), name))
        if not hasattr(draft, "tree") and hasattr(draft, "next_token_probs"):   # a Draft verified as a tree:
            self.tree = self._timed(lambda *args: full_tree(draft, *args), "tree")   # its full tree, nodes counted

    def _timed(self, fn, name):
        def timed(*args):
            t0 = time.process_time()
            out = fn(*args)
            self.seconds += time.process_time() - t0
            if name in ("chain", "tree"):
                self.drafted += len(out[0])
            elif name in ("propose", "argmax_next"):
                self.drafted += 1
            return out
        return timed


@dataclass
class Arm:
    """One speculative setup: `make()` returns a fresh draft (one call per race), verified with `options`."""

    name: str
    make: object
    gamma: object = 4
    temperature: float = 0.0
    options: dict = field(default_factory=dict)
    tree: bool = False


@dataclass
class ArmResult:
    """An arm's runs (a Comparison over all prompts) and its cost ratios, timed in them."""

    arm: Arm
    comparison: Comparison
    c: float
    r: float
    drafted_per_call: float
    positions_per_call: float

    @property
    def theory(self):
        """theory(c, r) = E / (r + d c) (module docstring); for a chain E(alpha, d), d the ids drafted per call
        (linear between the two gammas around it: a lookup, gamma="auto" or the last steps draft fewer)."""
        res = self.comparison
        d = self.drafted_per_call
        if self.arm.tree:
            tokens = res.tokens_per_call()[0]
        else:
            alpha, low = min(res.alpha()[0], 1.0), int(d)
            tokens = expected_tokens_per_step(alpha, low) + (d - low) * alpha ** (low + 1)   # E(g + 1) - E(g)
        return tokens / (self.r + d * self.c)


def race(target, arms, prompts, max_new_tokens, seed=0, warmup=()):
    """{arm name: ArmResult}: every arm on every prompt, one round per prompt, the arms' order rotating.

    warmup: prompts each arm first runs untimed (code paths; keep them out of `prompts`).
    """
    drafts = {arm.name: TimedDraft(arm.make()) for arm in arms}
    timed = {arm.name: TimedTarget(target) for arm in arms}
    for arm in arms:
        for prompt in warmup:
            compare(drafts[arm.name], target, [prompt], [arm.gamma], max_new_tokens, arm.temperature, **arm.options)
    for d in drafts.values():
        d.seconds, d.drafted = 0.0, 0
    merged = {arm.name: Comparison(arm.gamma) for arm in arms}
    for i, prompt in enumerate(prompts):
        for j in range(len(arms)):
            arm = arms[(i + j) % len(arms)]
            res = compare(drafts[arm.name], timed[arm.name], [prompt], [arm.gamma], max_new_tokens, arm.temperature,
                          seed=seed + i, **arm.options)
            merged[arm.name].extend(res[arm.gamma])
    out = {}
    for arm in arms:
        seconds, res = timed[arm.name].seconds, merged[arm.name]
        one = float(np.mean(seconds[1]))
        verify = [s for n, v in seconds.items() if 2 <= n <= 64 for s in v]
        calls = sum(res.calls)
        out[arm.name] = ArmResult(arm, res, drafts[arm.name].seconds / max(drafts[arm.name].drafted, 1) / one,
                                  float(np.mean(verify)) / one if verify else float("nan"),
                                  drafts[arm.name].drafted / calls, sum(res.positions) / calls)
    return out
