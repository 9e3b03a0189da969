"""specdec.generation.measure: fresh prompts, bootstrap intervals, the interleaved comparison's bookkeeping.

Independent references: exact binomial quantiles for a bootstrap of a 0/1 sample, hand-worked
cases, the theory's own closed form, and SpeculativeResult's counts for the same runs.
No assertion here is about speed (timings are measured in benchmarks/, never asserted).
"""

import math

import numpy as np
import pytest

from specdec.generation.decode import speculative_generate
from specdec.generation.measure import (Comparison, TimedTarget, call_costs, compare, fresh_prompts, median_ci,
                             predicted_speedup, ratio_ci, ratio_difference_ci, visited_contexts)
from specdec.theory import walltime_speedup


def test_fresh_prompts_are_distinct_disjoint_slices():
    text = "".join(chr(65 + i % 26) + str(i) for i in range(500))
    prompts = fresh_prompts(text, 40, 10, seed=3, start=100, stop=900)
    offsets = [text.index(p, 100) for p in prompts]   # every slice is unique in this text
    assert len(set(prompts)) == 40 and all(len(p) == 10 for p in prompts)
    assert all(100 <= o and o + 10 <= 900 and (o - 100) % 10 == 0 for o in offsets)   # aligned slots: disjoint
    assert fresh_prompts(text, 40, 10, seed=3, start=100, stop=900) == prompts      # seeded
    with pytest.raises(ValueError, match=r"n is 81: text\[100:900\] holds only 80 slices of 10 characters"):
        fresh_prompts(text, 81, 10, start=100, stop=900)


def binomial_quantile(n, p, q):
    """Smallest k with P(Binomial(n, p) <= k) >= q, by summing the exact pmf."""
    total = 0.0
    for k in range(n + 1):
        total += math.comb(n, k) * p ** k * (1 - p) ** (n - k)
        if total >= q:
            return k
    return n


def test_ratio_ci_of_a_zero_one_sample_is_the_binomial_interval():
    # den = 1: the ratio of sums is the mean, and a bootstrap resample of 40 values with 10 ones has
    # Binomial(40, 1/4) ones. Its 2.5% and 97.5% quantiles are 5 and 15; 2000 resamples land on them
    # or on a neighbour (the empirical quantile of a discrete law), so allow one step of 1/40.
    x = [1] * 10 + [0] * 30
    est, lo, hi = ratio_ci(x, [1] * 40, n_boot=2000, seed=1)
    assert est == 0.25
    assert abs(lo - binomial_quantile(40, 0.25, 0.025) / 40) <= 1 / 40
    assert abs(hi - binomial_quantile(40, 0.25, 0.975) / 40) <= 1 / 40


def test_intervals_by_hand():
    assert median_ci([2.0] * 5) == (2.0, 2.0, 2.0)                        # no spread, no width
    est, lo, hi = median_ci([1.0, 2.0, 3.0, 4.0, 100.0])
    assert est == 3.0 and 1.0 <= lo <= est <= hi <= 100.0                 # the outlier moves the mean, not this
    assert ratio_ci([3, 4, 5], [4, 4, 6])[0] == 12 / 14                   # pooled: 12 accepted of 14 tested
    with pytest.raises(ValueError, match="at least 2 values, got 1"):
        median_ci([1.0])
    with pytest.raises(ValueError, match="equal-length"):
        ratio_ci([1, 2], [1, 2, 3])


def test_a_paired_difference_removes_the_prompts_own_spread():
    # Two drafts on the same 6 prompts; prompts differ wildly (hard ones accept 2 of 10, easy ones 9 of 10),
    # and draft 2 accepts exactly one more draft of every 10 on each prompt: the difference is 0.1 on every
    # resample, so its interval has no width, while each rate's own interval is wide.
    tested = [10] * 6
    first, second = [2, 9, 2, 9, 2, 9], [3, 10, 3, 10, 3, 10]
    assert ratio_difference_ci(first, tested, second, tested) == pytest.approx((0.1, 0.1, 0.1), abs=1e-12)
    lo, hi = ratio_ci(first, tested)[1:]
    assert hi - lo > 0.3


def test_predicted_speedup_reduces_to_the_published_formula():
    for alpha, gamma, c in [(0.8, 4, 0.05), (0.5, 1, 0.0), (0.97, 8, 0.03)]:
        assert predicted_speedup(alpha, gamma, c) == pytest.approx(walltime_speedup(alpha, gamma, c), rel=1e-12)
    # r = 2: twice the call cost, by hand: E(0.8, 4) = 3.3616, / (2 + 4 * 0.05) = 1.528
    assert predicted_speedup(0.8, 4, 0.05, r=2.0) == pytest.approx(3.3616 / 2.2, rel=1e-12)


def test_compare_runs_each_prompt_once_per_side_and_counts_like_the_result(models):
    draft, target = models
    prompts = [target.encode(s) for s in ["The ", "If the ", "A class ", "Return ", "An ", "This "]]
    out = compare(draft, target, prompts, [1, 3], 20, temperature=0.0)
    assert sorted(out) == [1, 3] and all(isinstance(c, Comparison) for c in out.values())
    for i, g in enumerate([1, 3]):
        mine = out[g]
        assert sorted(mine.times) == [("plain", "cpu"), ("plain", "wall"), ("spec", "cpu"), ("spec", "wall")]
        assert all(len(t) == 3 and min(t) > 0 for t in mine.times.values())
        plain, spec = mine.times["plain", "cpu"], mine.times["spec", "cpu"]
        assert mine.total_speedup("cpu")[0] == pytest.approx(sum(plain) / sum(spec), rel=1e-12)
        assert mine.speedup("cpu")[0] == sorted(p / s for p, s in zip(plain, spec))[1]      # the median of 3
        res = [speculative_generate(draft, target, p, 20, g) for p in prompts[i::2]]   # prompt i goes to gamma i % 2
        assert mine.accepted == [sum(r.accepted) for r in res] and mine.calls == [r.target_calls for r in res]
        assert mine.tokens == [20] * 3
        assert mine.positions == [sum(r.scored) for r in res] and mine.drafts == [r.draft_calls for r in res]
        assert mine.tested == [round(sum(r.accepted) / r.alpha) for r in res]   # alpha = accepted / tested
        assert mine.alpha()[0] == sum(mine.accepted) / sum(mine.tested)
        assert mine.tokens_per_call()[0] == 60 / sum(mine.calls)


def test_compare_passes_the_rule_and_its_options_on(models):
    # a sampled tree: each prompt's counts are those of speculative_generate called with the same rule, width
    # and seed (compare seeds prompt i with [seed, i]); width=None and eps=None are left out, not passed on
    draft, target = models
    prompts = [target.encode(s) for s in ["The ", "If the "]]
    out = compare(draft, target, prompts, [2], 16, temperature=1.0, seed=4, verify="tree", width=3, eps=None)
    res = [speculative_generate(draft, target, p, 16, 2, 1.0, np.random.default_rng([4, i]), verify="tree", width=3)
           for i, p in enumerate(prompts)]
    assert out[2].calls == [r.target_calls for r in res] and out[2].drafts == [r.draft_calls for r in res]
    assert out[2].positions == [sum(r.scored) for r in res] and max(max(r.scored) for r in res) == 3 + 9 + 1
    plain = compare(draft, target, prompts[:1], [2], 16, temperature=1.0, seed=4, verify=None, width=None)
    assert plain[2].calls == [speculative_generate(draft, target, prompts[0], 16, 2, 1.0,
                                                   np.random.default_rng([4, 0])).target_calls]


def test_call_costs_measures_every_position_count(models):
    draft, target = models
    texts = [target.encode("The assert statement is a convenient way to insert debugging assertions")]
    per_call, per_step = call_costs(draft, target, texts, temperature=1.0, positions=range(1, 4), batch=8)
    assert sorted(per_call) == [1, 2, 3] and min(per_call.values()) > 0 and per_step > 0


def test_call_costs_times_calls_that_compute_n_new_positions_on_a_cached_target(models):
    """With a KV cache, a call on ctx that the cache mostly holds computes only the missing positions: the timed
    call for n positions must find the cache holding exactly ctx[:-n] (every second call is timed)."""
    from specdec.models.transformer import TransformerModel, init_params

    model = TransformerModel(init_params(V=models[1].V, context=64, d=8, n_layer=1, seed=0), n_head=2)
    seen = []

    class Watched:
        V = model.V

        def probs_for_positions(self, ids, start, temperature=1.0):
            seen.append((list(model.cached_ids), list(ids), start))
            return model.probs_for_positions(ids, start, temperature)

    texts = [list(range(1, 30))]
    call_costs(models[0], Watched(), texts, temperature=1.0, positions=range(1, 5), batch=4)
    timed = seen[1::2]
    assert len(timed) == 4 * 4 * ((29 - 4) // 4) and {len(ids) - start + 1 for _, ids, start in timed} == {1, 2, 3, 4}
    for cached, ids, start in timed:
        n = len(ids) - start + 1
        assert cached == ids[:-n], (n, len(cached), len(ids))


def test_timed_target_counts_every_call_and_changes_nothing(models):
    # 20 tokens at gamma 4: calls score 5 positions until fewer than 5 tokens remain (the loop never drafts
    # past the end), so the positions per call are the SpeculativeResult's drafted + 1, call for call
    draft, target = models
    timed = TimedTarget(target)
    prompt = target.encode("The ")
    mine = speculative_generate(draft, timed, prompt, 20, 4)
    assert mine.tokens == speculative_generate(draft, target, prompt, 20, 4).tokens
    expected = {}
    for d in mine.drafted:
        expected[d + 1] = expected.get(d + 1, 0) + 1
    assert {n: len(t) for n, t in timed.seconds.items()} == expected
    assert timed.cost(5) > 0 and timed.decode(timed.encode("ab")) == "ab" and timed.V == target.V


def test_visited_contexts_are_what_the_draft_was_asked(models):
    draft, target = models
    prompt = target.encode("If the ")
    (contexts,) = visited_contexts(draft, target, [prompt], 3, 15)
    res = speculative_generate(draft, target, prompt, 15, 3)
    assert len(contexts) == res.draft_calls and contexts[0] == prompt       # the first draft step sees the prompt
    assert all(c[:len(prompt)] == prompt for c in contexts)


def test_sampled_step_ratio_runs_each_side_on_its_own_fresh_draft_over_every_context():
    from specdec.generation.measure import sampled_step_ratio

    made = []

    class Recording:
        def __init__(self):
            self.proposed, self.greedy = [], []
            made.append(self)

        def propose(self, context, temperature, rng):
            self.proposed.append((tuple(context), temperature))
            return 0, [1.0]

        def argmax_next(self, context):
            self.greedy.append(tuple(context))
            return 0

    contexts = [[1], [1, 2], [3]]
    ratio = sampled_step_ratio(Recording, contexts, 0.7)
    assert ratio > 0 and len(made) == 2
    sampled, greedy = made
    assert sampled.proposed == [((1,), 0.7)] + [(tuple(c), 0.7) for c in contexts] and not sampled.greedy
    assert greedy.greedy == [(1,)] + [tuple(c) for c in contexts] and not greedy.proposed
