"""Measuring speculative decoding honestly: fresh prompts, interleaved pairs, intervals over prompts, verdicts.

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
- Comparing numbers measured at different moments. Wall-clock time counts the
  moments another process held the core; the process's CPU time does not, but
  it still grows when another program shares the machine (the caches, the
  memory bus and, in a virtual machine, the host are shared), so the same call
  can cost more in one cell than in the next. `compare` records both clocks,
  and with a `TimedTarget` it times every target call inside the compared runs
  themselves, so r(gamma) and the speedup it explains come from the same
  moments (`Comparison.r`, `Comparison.theory`, `Comparison.versus_theory`).

A measured figure decides a question only when its interval does: `side` says
whether an interval lies above a value, below it, or contains it, and
`verdict` picks the sentence that the interval supports. The lessons print
every measured claim through them.

`call_costs` measures the cost ratio c (draft step / target call) and r(n)
(target call scoring n positions / scoring 1) on texts of their own: each draft
step on a context the draft has never been asked about, target calls
interleaved over n. `draft_step_seconds` times the draft alone.

Lossless output is measured too (`first_token_counts`, `target_marginals`,
`sampled_tv`): the first ids of many short continuations against the target's
exact law, with a tolerance taken from the law itself.

    >>> est, lo, hi = ratio_ci([3, 4, 5], [4, 4, 6])           # 12 accepted of 14 tested
    >>> round(est, 4), lo <= est <= hi
    (0.8571, True)
    >>> round(predicted_speedup(0.8, 4, c=0.05, r=1.0), 4)     # theory.walltime_speedup: 3.3616 / 1.2
    2.8013
    >>> side((1.3, 1.1, 1.5), 1.0), side((0.9, 0.8, 1.05), 1.0)
    ('above', 'contains')
"""

import time
from dataclasses import dataclass, field, fields

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


# ---------------------------------------------------------------- intervals
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


def mean_ci(values, **kw):
    """(mean, low, high): the mean of `values` with a percentile bootstrap interval."""
    x = np.asarray(values, dtype=float)
    return bootstrap_ci(lambda idx: x[idx].mean(-1), len(x), **kw)


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


# ---------------------------------------------------------------- verdicts: what an interval decides
def side(ci, value):
    """Where the interval of ci = (estimate, low, high) lies against `value`: 'above' (low > value),
    'below' (high < value), or 'contains' (value in [low, high]: the measurement does not decide)."""
    _, lo, hi = ci
    return "above" if lo > value else "below" if hi < value else "contains"


def verdict(ci, value, above, below, contains):
    """The one of three sentences that the interval supports against `value` (`side`)."""
    return {"above": above, "below": below, "contains": contains}[side(ci, value)]


def fmt_ci(ci, f=".3f", unit=""):
    """'est [low, high]' with format f, each number followed by `unit`: (1.2345, 1.1, 1.4) -> '1.234 [1.100, 1.400]'."""
    est, lo, hi = ci
    return f"{est:{f}}{unit} [{lo:{f}}{unit}, {hi:{f}}{unit}]"


def speedup_verdict(ci):
    """The sentence a speedup's interval (measured against 1, no speedup) supports."""
    return verdict(ci, 1.0, "faster than plain decoding: the interval lies above 1",
                   "slower than plain decoding: the interval lies below 1",
                   "not shown to differ from plain decoding: the interval contains 1")


def theory_verdict(ci, theory="theory(c, r)"):
    """The sentence the interval of measured / theory supports: 1 means the theory accounts for the measurement."""
    return verdict(ci, 1.0, f"faster than {theory} predicts: the interval of measured / theory lies above 1",
                   f"slower than {theory} predicts: the interval of measured / theory lies below 1",
                   f"consistent with {theory}: the interval of measured / theory contains 1")


def order_verdict(a, b, name_a, name_b):
    """Whether the intervals of two independent measurements a and b decide their order: '<', '>' or undecided.

    Disjoint intervals decide (a conservative test: overlapping ones may still differ); the sentence says which.
    """
    if a[2] < b[1]:
        return f"{name_a} < {name_b}: the intervals do not overlap"
    if a[1] > b[2]:
        return f"{name_a} > {name_b}: the intervals do not overlap"
    return f"the order of {name_a} and {name_b} is not decided: the intervals overlap"


def predicted_speedup(alpha, gamma, c, r=1.0):
    """theory(c, r) = E / (r + gamma c): E tokens per target call, for a call that costs r(gamma) units.

    r = 1 is `theory.walltime_speedup`: scoring gamma + 1 positions costs what scoring one does.
    """
    return expected_tokens_per_step(alpha, gamma) / (r + gamma * c)


def _tokens_per_step(alpha, gamma):
    """expected_tokens_per_step on arrays of alpha (vectorized over bootstrap resamples)."""
    alpha = np.asarray(alpha, dtype=float)
    safe = np.where(alpha < 1, alpha, 0.5)
    return np.where(alpha < 1, (1 - safe ** (gamma + 1)) / (1 - safe), gamma + 1.0)


# ---------------------------------------------------------------- timed models
class TimedTarget:
    """A target that times every call it serves: `seconds[n]` lists the seconds of each call scoring n positions.

    `log` holds (n, seconds) for every call in order; `compare` reads it to give each prompt its own calls, so
    r(gamma) gets an interval over prompts (`Comparison.r`). Wrap the target of a `compare` run to measure r in
    situ, on the very (cold) runs being compared: the plain runs supply the 1-position calls. The two clock reads
    per call are far below a target call's cost.
    """

    def __init__(self, target, clock="cpu"):
        self.target, self.V, self._now, self.seconds, self.log = target, target.V, CLOCKS[clock], {}, []

    def _record(self, n, seconds):
        self.seconds.setdefault(n, []).append(seconds)
        self.log.append((n, seconds))

    def probs_for_positions(self, ids, start, temperature=1.0):
        t0 = self._now()
        rows = self.target.probs_for_positions(ids, start, temperature)
        self._record(len(rows), self._now() - t0)
        return rows

    def probs_for_tree(self, ids, parents, tokens, temperature=1.0):
        t0 = self._now()
        rows = self.target.probs_for_tree(ids, parents, tokens, temperature)
        self._record(len(rows), self._now() - t0)
        return rows

    def next_token_probs(self, contexts, temperature=1.0):
        return self.target.next_token_probs(contexts, temperature)

    def cost(self, positions):
        """Median seconds of a call scoring `positions` positions."""
        return float(np.median(self.seconds[positions]))

    def clear(self):
        """Forget every timed call (after a warm-up)."""
        self.seconds.clear()
        self.log.clear()

    def encode(self, text):
        return self.target.encode(text)

    def decode(self, ids):
        return self.target.decode(ids)


# ---------------------------------------------------------------- plain against speculative, interleaved
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
    # per prompt, with a TimedTarget: (positions, seconds) of every target call of each side's run
    call_log: dict = field(default_factory=lambda: {"plain": [], "spec": []})

    def extend(self, other):
        """Append `other`'s prompts to these: every per-prompt list, those of `times` and `call_log` too."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, dict):
                for key in mine:
                    mine[key] += theirs[key]
            elif isinstance(mine, list):
                mine.extend(theirs)

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

    def clocks_ratio(self, **kw):
        """(wall-clock speedup / CPU-time speedup, low, high), both totals, on the same resampled prompts.

        1 when the two clocks agree; away from 1 when another program took the processor from one side more
        than from the other (wall time counts those moments, CPU time does not).
        """
        pw, sw, pc, sc = (np.asarray(self.times[k], dtype=float)
                          for k in (("plain", "wall"), ("spec", "wall"), ("plain", "cpu"), ("spec", "cpu")))
        return bootstrap_ci(lambda i: (pw[i].sum(-1) / sw[i].sum(-1)) / (pc[i].sum(-1) / sc[i].sum(-1)),
                            len(pw), **kw)

    def call_seconds(self, side, positions):
        """[prompts]: per prompt, the median seconds of `side`'s target calls scoring `positions` positions."""
        if not any(self.call_log[side]):
            raise ValueError("no target call was timed: run compare with a TimedTarget")
        out = []
        for i, calls in enumerate(self.call_log[side]):
            s = [sec for n, sec in calls if n == positions]
            if not s:
                raise ValueError(f"prompt {i} has no {side} call scoring {positions} positions")
            out.append(float(np.median(s)))
        return np.asarray(out)

    def r(self, **kw):
        """(r(gamma), low, high) in situ: the speculative runs' calls of gamma + 1 positions over the plain runs'
        calls of one, per prompt the median call, pooled over prompts as a ratio of sums."""
        return ratio_ci(self.call_seconds("spec", self.gamma + 1), self.call_seconds("plain", 1), **kw)

    def _theory(self, c, counted):
        """statistic(idx): theory(c, r) on resampled prompts: E(alpha) (or tokens / calls) / (r + gamma c)."""
        a, t = np.asarray(self.accepted, float), np.asarray(self.tested, float)
        tok, calls = np.asarray(self.tokens, float), np.asarray(self.calls, float)
        num, den = self.call_seconds("spec", self.gamma + 1), self.call_seconds("plain", 1)

        def statistic(idx):
            e = tok[idx].sum(-1) / calls[idx].sum(-1) if counted else \
                _tokens_per_step(a[idx].sum(-1) / t[idx].sum(-1), self.gamma)
            return e / (num[idx].sum(-1) / den[idx].sum(-1) + self.gamma * c)
        return statistic

    def theory(self, c, counted=False, **kw):
        """(theory(c, r), low, high) = E(alpha, gamma) / (r(gamma) + gamma c), alpha and r measured in these runs,
        resampled together over prompts; counted=True puts the tokens per call actually counted in place of E."""
        return bootstrap_ci(self._theory(c, counted), len(self.tokens), **kw)

    def versus_theory(self, c, clock="cpu", counted=False, **kw):
        """(measured total speedup / theory(c, r), low, high), both on the same resampled prompts."""
        plain, spec = np.asarray(self.times["plain", clock], float), np.asarray(self.times["spec", clock], float)
        theory = self._theory(c, counted)
        return bootstrap_ci(lambda idx: plain[idx].sum(-1) / spec[idx].sum(-1) / theory(idx), len(plain), **kw)

    def target_share(self, side="spec", **kw):
        """(share of `side`'s CPU time spent inside target calls, low, high), pooled over prompts."""
        inside = [sum(sec for _, sec in calls) for calls in self.call_log[side]]
        return ratio_ci(inside, self.times[side, "cpu"], **kw)


def compare(draft, target, prompts, gammas, max_new_tokens, temperature=0.0, seed=0, prefill=True, **options):
    """Plain against speculative decoding, every prompt generated once by each side: {gamma: Comparison}.

    Prompt i is run at gamma = gammas[i % len(gammas)], so each gamma gets its own prompts and no
    draft row is reused from a previous gamma's run on the same text. Plain goes first on every
    other round. `options` (verify=, width=, ...) go to speculative_generate, those set to None left out.
    With a `TimedTarget`, each run's target calls are kept with its prompt (`Comparison.call_log`).

    prefill: before each side, an untimed target call on the prompt, so that a target with a KV cache
    starts both sides with the prompt read (as a server reads a prompt once, before decoding). Without
    it, whichever side goes first also pays for reading the prompt, a cost the same for both methods
    that pulls the measured ratio towards 1 and that theory(c, r), a model of decoding, does not count.
    """
    from .decode import autoregressive_generate, speculative_generate

    out = {g: Comparison(g) for g in gammas}
    extra = {name: value for name, value in options.items() if value is not None}
    log = getattr(target, "log", None)
    model = target.target if isinstance(target, TimedTarget) else target      # the prefill is not logged
    for i, prompt in enumerate(prompts):
        res = out[gammas[i % len(gammas)]]
        # Subtle: alternate on the round, not on i: with an even number of gammas, i % 2 would put the
        # same side first for every prompt of a given gamma.
        sides = ["plain", "spec"] if (i // len(gammas)) % 2 == 0 else ["spec", "plain"]
        for side_ in sides:
            rng = np.random.default_rng([seed, i])
            fresh_cache(target)              # neither side may find the other's KV cache of this prompt
            if prefill and len(prompt):      # then both read the prompt, untimed, into that fresh cache
                model.probs_for_positions(prompt, len(prompt), temperature or 1.0)
            first = len(log) if log is not None else 0
            start = {name: clock() for name, clock in CLOCKS.items()}
            if side_ == "plain":
                autoregressive_generate(target, prompt, max_new_tokens, temperature, rng)
            else:
                s = speculative_generate(draft, target, prompt, max_new_tokens, res.gamma, temperature, rng, **extra)
            for name, clock in CLOCKS.items():
                res.times[side_, name].append(clock() - start[name])
            res.call_log[side_].append(log[first:] if log is not None else [])
        res.accepted.append(sum(s.accepted))
        res.tested.append(sum(a + (a < d) for a, d in zip(s.accepted, s.drafted)))
        res.tokens.append(len(s.tokens))
        res.calls.append(s.target_calls)
        res.positions.append(sum(s.scored))
        res.drafts.append(s.draft_calls)
    return out


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


# ---------------------------------------------------------------- costs measured on texts of their own
def draft_step_seconds(draft, draft_contexts, temperature=0.0, seed=0, clock="cpu"):
    """[lists]: per list of contexts, the seconds of one draft step (greedy `argmax_next`, else `propose`).

    One clock read before and after each list, not each step: a draft step can cost little more than a clock
    read, so per-step reads would time the clock. Give contexts the draft has
    never been asked about: the prefixes of texts new to the process, or `visited_contexts`.
    """
    now, rng, out = CLOCKS[clock], np.random.default_rng(seed), []
    for steps in draft_contexts:
        t0 = now()
        if temperature == 0:
            for ctx in steps:
                draft.argmax_next(ctx)
        else:
            for ctx in steps:
                draft.propose(ctx, temperature, rng)
        out.append((now() - t0) / max(len(steps), 1))
    return np.asarray(out)


def call_costs(draft, target, texts, temperature=0.0, positions=range(1, 10), batch=16, seed=0, clock="wall",
               draft_contexts=None):
    """(target seconds per call scoring n positions {n: s}, draft seconds per step), both medians.

    `texts` are id lists the draft has never been asked about (for example plain-decoded text
    of fresh prompts). Draft: one step on each context of a text, in order (`draft_step_seconds`),
    or on each list of `draft_contexts` (from `visited_contexts`: the contexts speculative decoding
    itself visits, which matters for a draft whose cost depends on what it has cached). Target:
    batches of `batch` calls per n, the n cycled in a shuffled order on every text, so all n share
    the machine's load; before each timed call an untimed one on ctx[:-n], so a target that keeps a
    KV cache (`models.TransformerModel`) computes exactly n new positions in it.
    """
    now, rng, order = CLOCKS[clock], np.random.default_rng(seed), list(positions)
    per_call = {n: [] for n in order}
    if draft_contexts is None:
        draft_contexts = [[list(ids[:t]) for t in range(1, len(ids) + 1)] for ids in texts]
    per_step = draft_step_seconds(draft, draft_contexts, temperature, seed, clock)
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


# ---------------------------------------------------------------- the output law: lossless, measured
def first_token_counts(draft, target, prompt, runs, gamma, tokens=2, temperature=1.0, seed=0, **options):
    """[tokens, V] int counts: how often each id came first, second, ... in `runs` speculative continuations.

    Each continuation is `tokens` ids long, generated from the same prompt with its own seeded generator
    ([seed, run]); `options` (verify=, width=) go to speculative_generate.
    """
    from .decode import speculative_generate

    counts = np.zeros((tokens, target.V), np.int64)
    for i in range(runs):
        out = speculative_generate(draft, target, prompt, tokens, gamma, temperature, np.random.default_rng([seed, i]),
                                   **options).tokens
        counts[np.arange(tokens), out] += 1
    return counts


def target_marginals(target, prompt, tokens=2, temperature=1.0):
    """[tokens, V]: the exact law of the first and (tokens = 2) second id of the target's own sampling at T.

    First: p(. | prompt). Second: sum_x p(x | prompt) p(. | prompt + x), from one row per x in [0, V).
    """
    if tokens not in (1, 2):
        raise ValueError(f"tokens is {tokens}: the exact law is computed for the first 1 or 2 ids")
    p1 = target.probs_for_positions(prompt, len(prompt), temperature)[0]
    if tokens == 1:
        return p1[None]
    rows = target.next_token_probs([list(prompt) + [x] for x in range(target.V)], temperature)   # [V, V]
    return np.stack([p1, p1 @ rows])


def total_variation(counts, law):
    """TV between the frequencies of `counts` and `law`, along the last axis: 1/2 sum |counts / n - law|."""
    counts = np.asarray(counts, dtype=float)
    return 0.5 * np.abs(counts / counts.sum(-1, keepdims=True) - law).sum(-1)


def sampled_tv(law, n, source=None, reps=20_000, seed=0):
    """[reps]: the TV to `law` of the frequencies of n draws from `source` (default: `law` itself).

    From `law` itself it is what an exact sampler shows, and its upper quantile is a tolerance with a stated
    false-alarm rate: an exact sampler exceeds np.quantile(sampled_tv(law, n), 0.999) with probability 0.001,
    whatever the shape of the law. From a wrong law, the share of values above that tolerance is the test's
    power against it.
    """
    law = np.asarray(law, dtype=float)
    source = law if source is None else np.asarray(source, dtype=float)
    return total_variation(np.random.default_rng(seed).multinomial(n, source / source.sum(), size=reps), law)


def fresh_cache(target):
    """Empty the KV cache of `target`, and of the target a wrapper (`TimedTarget`, a stand-in) holds as `.target`:
    each side `compare` times starts as a new request does, with no prefix of its prompt computed."""
    while target is not None:
        if callable(getattr(target, "reset", None)):
            target.reset()
        target = getattr(target, "target", None)
