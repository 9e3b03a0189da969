"""Measuring speculative decoding honestly: fresh prompts, interleaved pairs, intervals over prompts.

`theory.py` predicts; this module measures, and says how sure the measurement is.
Three mistakes make a speedup look better or surer than it is:

- Timing what a cache remembers. A draft that keeps what it computed is fast on
  text it has already seen, so re-running one prompt and keeping the best run
  times the cache, not the method. Here every timed prompt is new to the process
  (`fresh_prompts`: non-overlapping slices at random offsets), each side generates
  it once, and the caller warms up on *other* prompts first.
- Trusting one number. A burst of load from another program can hit one side
  only. The two sides run back to back on each prompt, the side that goes first
  alternating (`compare`), and a figure is reported with a 95% percentile
  bootstrap interval over prompts: the median per-prompt ratio for speedups
  (`median_ci`), a ratio of sums for rates such as alpha (`ratio_ci`), because
  the draft steps of one prompt are not independent, but prompts are.
- Charging other programs' time. Wall-clock time counts the moments another
  process held the core; the process's CPU time does not. On a quiet machine the
  two agree; on a shared one `compare` records both, and the CPU figure is the
  one to hold against a cost model (the wall figure stays beside it).

`call_costs` measures the cost ratio c (draft step / target call) and r(n)
(target call scoring n positions / scoring 1) the same way: each draft step on
a context the draft has never been asked about, target calls interleaved over n;
`TimedTarget` measures r inside the compared runs themselves.

    >>> est, lo, hi = ratio_ci([3, 4, 5], [4, 4, 6])           # 12 accepted of 14 tested
    >>> round(est, 4), lo <= est <= hi
    (0.8571, True)
    >>> round(predicted_speedup(0.8, 4, c=0.05, r=1.0), 4)     # theory.walltime_speedup: 3.3616 / 1.2
    2.8013
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ..theory import expected_tokens_per_step

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}   # cpu: this process's CPU time, all threads


def fresh_prompts(text, n, length, seed=0, start=0, stop=None):
    """n different, non-overlapping slices of `text[start:stop]`, `length` characters each, at random offsets."""
    stop = len(text) if stop is None else stop
    slots = (stop - start) // length
    if not 0 <= n <= slots:
        raise ValueError(f"n is {n}: text[{start}:{stop}] holds only {slots} slices of {length} characters")
    picked = np.random.default_rng(seed).choice(slots, n, replace=False)
    return [text[start + int(i) * length: start + (int(i) + 1) * length] for i in picked]


def bootstrap_ci(statistic, n, level=0.95, n_boot=2000, seed=0):
    """(statistic of the sample, low, high): a percentile bootstrap over n items (prompts).

    statistic(idx) takes an int array [..., n] of item indices and reduces its last axis, so one
    call evaluates all n_boot resamples at once; the estimate is statistic(arange(n)).
    """
    if n < 2:
        raise ValueError(f"an interval needs at least 2 values, got {n}")
    idx = np.random.default_rng(seed).integers(0, n, (n_boot, n))
    lo, hi = np.quantile(statistic(idx), [(1 - level) / 2, (1 + level) / 2])
    return float(statistic(np.arange(n))), float(lo), float(hi)


def median_ci(values, **kw):
    """(median, low, high): the median of `values` with a percentile bootstrap interval."""
    x = np.asarray(values, dtype=float)
    return bootstrap_ci(lambda idx: np.median(x[idx], axis=-1), len(x), **kw)


def ratio_ci(numerators, denominators, **kw):
    """(sum num / sum den, low, high), resampling the (num, den) pairs: a rate pooled over prompts."""
    a, b = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"need two equal-length sequences, got {a.shape} and {b.shape}")
    return bootstrap_ci(lambda idx: a[idx].sum(-1) / b[idx].sum(-1), len(a), **kw)


def ratio_difference_ci(num1, den1, num2, den2, **kw):
    """(rate 2 - rate 1, low, high) for two rates measured on the SAME prompts, resampled together.

    Pairing removes the prompts' own difficulty from the comparison: the interval is far
    narrower than the two rates' intervals side by side.
    """
    a1, b1, a2, b2 = (np.asarray(x, dtype=float) for x in (num1, den1, num2, den2))
    if not a1.shape == b1.shape == a2.shape == b2.shape:
        raise ValueError("need four equal-length sequences, one value per prompt")
    return bootstrap_ci(lambda idx: a2[idx].sum(-1) / b2[idx].sum(-1) - a1[idx].sum(-1) / b1[idx].sum(-1),
                        len(a1), **kw)


def predicted_speedup(alpha, gamma, c, r=1.0):
    """theory(c, r) = E / (r + gamma c): E tokens per target call, for a call that costs r(gamma) units.

    r = 1 is `theory.walltime_speedup`: scoring gamma + 1 positions costs what scoring one does.
    """
    return expected_tokens_per_step(alpha, gamma) / (r + gamma * c)


@dataclass
class Comparison:
    """Per prompt: seconds of plain and of speculative decoding on each clock, and the speculative run's counts."""

    gamma: int
    times: dict = field(default_factory=lambda: {(side, clock): [] for side in ("plain", "spec") for clock in CLOCKS})
    accepted: list = field(default_factory=list)     # drafts accepted
    tested: list = field(default_factory=list)       # drafts tested (a draft after a rejection is not)
    tokens: list = field(default_factory=list)
    calls: list = field(default_factory=list)        # target calls
    positions: list = field(default_factory=list)    # positions the target scored (gamma + 1 a call; tree nodes + 1)
    drafts: list = field(default_factory=list)       # contexts the draft scored

    def speedup(self, clock="wall", **kw):
        """(median over prompts of t_plain / t_spec on `clock` ("wall" or "cpu"), low, high)."""
        return median_ci(np.asarray(self.times["plain", clock]) / np.asarray(self.times["spec", clock]), **kw)

    def total_speedup(self, clock="wall", **kw):
        """(sum t_plain / sum t_spec, low, high): throughput over all prompts, the quantity theory(c, r) predicts
        with the pooled alpha. With few prompts it is steadier than the median of per-prompt ratios."""
        return ratio_ci(self.times["plain", clock], self.times["spec", clock], **kw)

    def alpha(self, **kw):
        return ratio_ci(self.accepted, self.tested, **kw)

    def tokens_per_call(self, **kw):
        return ratio_ci(self.tokens, self.calls, **kw)


def compare(draft, target, prompts, gammas, max_new_tokens, temperature=0.0, seed=0, **options):
    """Plain against speculative decoding, every prompt generated once by each side: {gamma: Comparison}.

    Prompt i is run at gamma = gammas[i % len(gammas)], so each gamma gets its own prompts and no
    draft row is reused from a previous gamma's run on the same text. Plain goes first on every
    other round. `options` (verify=, width=, ...) go to speculative_generate, those set to None left out.
    """
    from .decode import autoregressive_generate, speculative_generate

    out = {g: Comparison(g) for g in gammas}
    extra = {name: value for name, value in options.items() if value is not None}
    for i, prompt in enumerate(prompts):
        res = out[gammas[i % len(gammas)]]
        # Subtle: alternate on the round, not on i: with an even number of gammas, i % 2 would put the
        # same side first for every prompt of a given gamma.
        sides = ["plain", "spec"] if (i // len(gammas)) % 2 == 0 else ["spec", "plain"]
        for side in sides:
            rng = np.random.default_rng([seed, i])
            fresh_cache(target)              # neither side may find the other's KV cache of this prompt
            start = {name: clock() for name, clock in CLOCKS.items()}
            if side == "plain":
                autoregressive_generate(target, prompt, max_new_tokens, temperature, rng)
            else:
                s = speculative_generate(draft, target, prompt, max_new_tokens, res.gamma, temperature, rng, **extra)
            for name, clock in CLOCKS.items():
                res.times[side, name].append(clock() - start[name])
        res.accepted.append(sum(s.accepted))
        res.tested.append(sum(a + (a < d) for a, d in zip(s.accepted, s.drafted)))
        res.tokens.append(len(s.tokens))
        res.calls.append(s.target_calls)
        res.positions.append(sum(s.scored))
        res.drafts.append(s.draft_calls)
    return out


class TimedTarget:
    """A target that times every call it serves: `seconds[n]` lists the seconds of each call scoring n positions.

    Wrap the target of a `compare` run to measure r in situ, on the very (cold) runs being compared:
    r(gamma) = median(seconds[gamma + 1]) / median(seconds[1]), the plain runs supplying the 1-position
    calls. The two clock reads per call are far below a call's cost for a slow (memory-bound) target.
    """

    def __init__(self, target, clock="cpu"):
        self.target, self.V, self._now, self.seconds = target, target.V, CLOCKS[clock], {}

    def probs_for_positions(self, ids, start, temperature=1.0):
        t0 = self._now()
        rows = self.target.probs_for_positions(ids, start, temperature)
        self.seconds.setdefault(len(rows), []).append(self._now() - t0)
        return rows

    def probs_for_tree(self, ids, parents, tokens, temperature=1.0):
        t0 = self._now()
        rows = self.target.probs_for_tree(ids, parents, tokens, temperature)
        self.seconds.setdefault(len(rows), []).append(self._now() - t0)
        return rows

    def next_token_probs(self, contexts, temperature=1.0):
        return self.target.next_token_probs(contexts, temperature)

    def cost(self, positions):
        """Median seconds of a call scoring `positions` positions."""
        return float(np.median(self.seconds[positions]))

    def encode(self, text):
        return self.target.encode(text)

    def decode(self, ids):
        return self.target.decode(ids)


class _Recorder:
    """A draft that writes down every context it is asked about, then answers as `draft` does."""

    def __init__(self, draft):
        self.draft, self.V, self.contexts = draft, draft.V, []

    def argmax_next(self, context):
        self.contexts.append(list(context))
        return self.draft.argmax_next(context)

    def propose(self, context, temperature, rng):
        self.contexts.append(list(context))
        return self.draft.propose(context, temperature, rng)

    def next_token_probs(self, contexts, temperature=1.0):
        self.contexts += [list(c) for c in contexts]
        return self.draft.next_token_probs(contexts, temperature)


def visited_contexts(draft, target, prompts, gamma, max_new_tokens, temperature=0.0, seed=0):
    """Per prompt, the contexts speculative decoding asks the draft about, in order.

    Run it with a SEPARATE copy of the draft (`load_pretrained()` again): the copy's caches fill,
    and the contexts can then be replayed on the draft under test, which has never seen them.
    """
    from .decode import speculative_generate

    out = []
    for i, prompt in enumerate(prompts):
        rec = _Recorder(draft)
        speculative_generate(rec, target, prompt, max_new_tokens, gamma, temperature, np.random.default_rng([seed, i]))
        out.append(rec.contexts)
    return out


def call_costs(draft, target, texts, temperature=0.0, positions=range(1, 10), batch=16, seed=0, clock="wall",
               draft_contexts=None):
    """(target seconds per call scoring n positions {n: s}, draft seconds per step), both medians.

    `texts` are id lists the draft has never been asked about (for example plain-decoded text
    of fresh prompts). Draft: one step on each context of a text, in order (greedy: `argmax_next`,
    else `propose`), or on each list of `draft_contexts` (from `visited_contexts`: the contexts
    speculative decoding itself visits, which matters for a draft whose cost depends on what it
    has cached). Target: batches of `batch` calls per n, the n cycled in a shuffled order on every
    text, so all n share the machine's load; before each timed call an untimed one on ctx[:-n], so a
    target that keeps a KV cache (`models.TransformerModel`) computes exactly n new positions in it.
    """
    now, rng, order = CLOCKS[clock], np.random.default_rng(seed), list(positions)
    per_step, per_call = [], {n: [] for n in order}
    if draft_contexts is None:
        draft_contexts = [[list(ids[:t]) for t in range(1, len(ids) + 1)] for ids in texts]
    for steps in draft_contexts:
        t0 = now()
        if temperature == 0:
            for ctx in steps:
                draft.argmax_next(ctx)
        else:
            for ctx in steps:
                draft.propose(ctx, temperature, rng)
        per_step.append((now() - t0) / max(len(steps), 1))
    for ids in texts:
        contexts = [list(ids[:t]) for t in range(max(order) + 1, len(ids) + 1)]
        rng.shuffle(order)
        for n in order:
            for j in range(0, len(contexts) - batch + 1, batch):
                seconds = 0.0
                for ctx in contexts[j:j + batch]:
                    # untimed: a target with a KV cache now holds ctx[:-n], so the timed call computes n new
                    # positions (the last accepted token and n - 1 drafts), as verification's call does
                    target.probs_for_positions(ctx[:-n], len(ctx) - n, temperature or 1.0)
                    t0 = now()
                    target.probs_for_positions(ctx, len(ctx) - n + 1, temperature or 1.0)
                    seconds += now() - t0
                per_call[n].append(seconds / batch)
    return {n: float(np.median(v)) for n, v in sorted(per_call.items())}, float(np.median(per_step))


def sampled_step_ratio(new_draft, contexts, temperature=1.0, clock="cpu"):
    """Seconds of a sampled draft step (`propose` at T) over a greedy one (`argmax_next`), on the SAME contexts.

    `new_draft()` returns a freshly loaded draft: each side runs on its own, cold, so neither times rows the
    other cached. Give the contexts sampling visits (`visited_contexts`): c measured at T = 1 and at T = 0 on each
    decoding's own contexts also differs by where those texts go, and this ratio separates the step itself.
    """
    now, rng = CLOCKS[clock], np.random.default_rng(0)
    sampled, greedy = new_draft(), new_draft()
    sampled.propose(contexts[0], temperature, rng)          # untimed: what is built once per temperature
    greedy.argmax_next(contexts[0])
    t0 = now()
    for ctx in contexts:
        sampled.propose(ctx, temperature, rng)
    t1 = now()
    for ctx in contexts:
        greedy.argmax_next(ctx)
    return (t1 - t0) / (now() - t1)


def fresh_cache(target):
    """Empty the KV cache of `target`, and of the target a wrapper (`TimedTarget`, a stand-in) holds as `.target`:
    each side `compare` times starts as a new request does, with no prefix of its prompt computed."""
    while target is not None:
        if callable(getattr(target, "reset", None)):
            target.reset()
        target = getattr(target, "target", None)
