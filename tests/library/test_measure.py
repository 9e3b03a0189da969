"""specdec.generation.measure: fresh prompts, bootstrap intervals, verdicts, the interleaved comparison's bookkeeping.

Independent references: exact binomial quantiles for a bootstrap of a 0/1 sample, hand-worked
cases, the theory's own closed form, SpeculativeResult's counts for the same runs, and synthetic
measurements on both sides of every verdict's threshold (the lessons print their measured claims
through these verdicts). No assertion here is about speed (timings are measured in benchmarks/, never asserted).
"""

import math

import numpy as np
import pytest

from specdec.generation.decode import speculative_generate
from specdec.generation.measure import (Comparison, TimedTarget, call_costs, compare, draft_step_seconds, fmt_ci,
                                        fresh_prompts, mean_ci, median_ci, order_verdict, predicted_speedup, ratio_ci,
                                        ratio_difference_ci, side, speedup_verdict, theory_verdict, verdict,
                                        visited_contexts)
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


# ---------------------------------------------------------------- verdicts: synthetic measurements on both sides
@pytest.mark.parametrize("ci, value, expected", [
    ((1.3, 1.1, 1.5), 1.0, "above"), ((0.8, 0.7, 0.9), 1.0, "below"), ((1.0, 0.9, 1.1), 1.0, "contains"),
    ((1.05, 1.0, 1.1), 1.0, "contains"), ((0.95, 0.9, 1.0), 1.0, "contains"),     # an end on the value: undecided
    ((1.0000001, 1.0000001, 1.2), 1.0, "above"), ((-0.5, -0.7, -0.1), 0.0, "below"),
])
def test_side_decides_only_what_the_interval_decides(ci, value, expected):
    assert side(ci, value) == expected
    assert verdict(ci, value, "A", "B", "C") == {"above": "A", "below": "B", "contains": "C"}[expected]


def test_the_named_verdicts_on_both_sides_of_their_thresholds():
    assert speedup_verdict((1.5, 1.2, 1.8)).startswith("faster than plain decoding")
    assert speedup_verdict((0.8, 0.7, 0.95)).startswith("slower than plain decoding")
    assert speedup_verdict((1.1, 0.9, 1.3)).startswith("not shown to differ")
    assert theory_verdict((0.9, 0.85, 0.95)).startswith("slower than theory(c, r) predicts")
    assert theory_verdict((1.1, 1.05, 1.15), "theory(c)").startswith("faster than theory(c) predicts")
    assert theory_verdict((1.0, 0.97, 1.03)).startswith("consistent with theory(c, r)")
    a, b = (2.0, 1.9, 2.1), (3.0, 2.8, 3.2)
    assert order_verdict(a, b, "r(3)", "r(2)") == "r(3) < r(2): the intervals do not overlap"
    assert order_verdict(b, a, "r(3)", "r(2)") == "r(3) > r(2): the intervals do not overlap"
    assert order_verdict(a, (2.2, 2.05, 2.4), "a", "b").startswith("the order of a and b is not decided")
    assert fmt_ci((1.23456, 1.1, 1.4)) == "1.235 [1.100, 1.400]"
    assert fmt_ci((0.5, 0.25, 0.75), ".0%") == "50% [25%, 75%]"


def test_mean_ci_by_hand():
    assert mean_ci([2.0, 2.0, 2.0]) == (2.0, 2.0, 2.0)
    est, lo, hi = mean_ci([1.0, 2.0, 3.0, 4.0])
    assert est == 2.5 and 1.0 <= lo < est < hi <= 4.0


def synthetic_comparison(gamma, plain_call, spec_call, prompts=6, calls=(12, 4), tokens=12, spread=0.0, seed=0):
    """A Comparison built by hand: each prompt's plain run makes calls[0] one-position calls of plain_call seconds
    (one per token), its speculative run calls[1] calls of gamma + 1 positions of spec_call seconds (each times
    1 + spread * noise), and the runs take exactly their calls' time; every prompt emits `tokens` tokens and
    accepts 2 of 4 drafts tested."""
    rng = np.random.default_rng(seed)
    c = Comparison(gamma)
    for _ in range(prompts):
        plain = [(1, plain_call * (1 + spread * rng.standard_normal())) for _ in range(calls[0])]
        spec = [(gamma + 1, spec_call * (1 + spread * rng.standard_normal())) for _ in range(calls[1])]
        c.call_log["plain"].append(plain)
        c.call_log["spec"].append(spec)
        for side_, log in (("plain", plain), ("spec", spec)):
            for clock in ("cpu", "wall"):
                c.times[side_, clock].append(sum(s for _, s in log))
        c.accepted.append(2)
        c.tested.append(4)
        c.tokens.append(tokens)
        c.calls.append(calls[1])
    return c


def test_r_and_theory_from_the_calls_of_the_runs_themselves():
    # plain calls 1 ms, speculative calls of 3 positions 1.5 ms: r(2) = 1.5 exactly, on every resample
    c = synthetic_comparison(2, 1e-3, 1.5e-3)
    assert c.r() == pytest.approx((1.5, 1.5, 1.5))
    # alpha = 2/4 = 0.5: E(0.5, 2) = 1.75; theory(c = 0.01, r) = 1.75 / (1.5 + 0.02)
    assert c.theory(0.01)[0] == pytest.approx(1.75 / 1.52)
    # counted: 12 tokens in 4 calls = 3 per call instead of E
    assert c.theory(0.01, counted=True)[0] == pytest.approx(3 / 1.52)
    # measured: plain 12 ms, spec 6 ms per prompt: 2; theory(0, r) with the counted tokens: 3 / 1.5 = 2, exactly
    assert c.total_speedup("cpu")[0] == pytest.approx(2.0)
    assert c.versus_theory(0.0, counted=True) == pytest.approx((1.0, 1.0, 1.0))
    assert c.target_share("spec") == pytest.approx((1.0, 1.0, 1.0))     # the runs were nothing but their calls
    assert c.clocks_ratio() == pytest.approx((1.0, 1.0, 1.0))


def test_measured_against_theory_on_both_sides():
    # a run slower than its calls (an overhead outside them) falls below theory; one faster (a theory that charged
    # too much) above it; a noisy run that matches it on average contains 1
    slow = synthetic_comparison(2, 1e-3, 1.5e-3)
    slow.times["spec", "cpu"] = [t * 1.2 for t in slow.times["spec", "cpu"]]
    assert side(slow.versus_theory(0.0, counted=True), 1.0) == "below"
    assert side(slow.target_share("spec"), 1.0) == "below"
    fast = synthetic_comparison(2, 1e-3, 1.5e-3)
    fast.times["spec", "cpu"] = [t * 0.8 for t in fast.times["spec", "cpu"]]
    assert side(fast.versus_theory(0.0, counted=True), 1.0) == "above"
    noisy = synthetic_comparison(2, 1e-3, 1.5e-3, prompts=20, spread=0.3)
    ratio = noisy.versus_theory(0.0, counted=True)
    assert ratio[1] < 1 < ratio[2] and abs(ratio[0] - 1) < 0.05
    # the clocks: a wall clock that counted another program's time on the speculative side only
    busy = synthetic_comparison(2, 1e-3, 1.5e-3)
    busy.times["spec", "wall"] = [t * 1.5 for t in busy.times["spec", "wall"]]
    assert side(busy.clocks_ratio(), 1.0) == "below"


def test_a_comparison_without_timed_calls_says_so():
    c = synthetic_comparison(2, 1e-3, 1.5e-3)
    c.call_log = {"plain": [[], []], "spec": [[], []]}
    with pytest.raises(ValueError, match="run compare with a TimedTarget"):
        c.r()
    c = synthetic_comparison(2, 1e-3, 1.5e-3)
    c.call_log["spec"][0] = [(2, 1e-3)]                       # no call of gamma + 1 = 3 positions in prompt 0
    with pytest.raises(ValueError, match="prompt 0 has no spec call scoring 3 positions"):
        c.r()


def test_compare_with_a_timed_target_keeps_each_runs_calls_and_not_the_prefill(models):
    draft, target = models
    timed = TimedTarget(target)
    prompts = [target.encode(s) for s in ["The ", "If the ", "A class ", "Return "]]
    out = compare(draft, timed, prompts, [2, 3], 15, temperature=1.0)
    for g in (2, 3):
        runs = [speculative_generate(draft, target, p, 15, g, 1.0, np.random.default_rng([0, i]))
                for i, p in list(enumerate(prompts))[g - 2::2]]
        assert [len(log) for log in out[g].call_log["spec"]] == [r.target_calls for r in runs]
        assert [sorted({n for n, _ in log}) for log in out[g].call_log["spec"]] == \
            [sorted({d + 1 for d in r.drafted}) for r in runs]
        assert [len(log) for log in out[g].call_log["plain"]] == [15, 15]     # one call per token: no prefill
        assert all(n == 1 for log in out[g].call_log["plain"] for n, _ in log)
        est, lo, hi = out[g].r()
        assert 0 < lo <= est <= hi
    assert len(timed.log) == sum(len(log) for g in (2, 3) for s in ("plain", "spec") for log in out[g].call_log[s])
    timed.clear()
    assert timed.log == [] and timed.seconds == {}


@pytest.mark.parametrize("prefill", [True, False])
def test_the_prefill_puts_the_prompt_in_a_cached_target_before_each_side(models, prefill):
    # Each side starts from a fresh cache (measure.fresh_cache: neither finds the other's work); with prefill, that
    # cache then holds exactly the prompt, read untimed; without, each side pays for the prompt in its timed calls.
    from specdec.models.transformer import TransformerModel, init_params

    draft = models[0]
    model = TransformerModel(init_params(V=draft.V, context=64, d=8, n_layer=1, seed=0), n_head=2)
    seen = []

    class Watching(TimedTarget):
        def probs_for_positions(self, ids, start, temperature=1.0):
            seen.append(list(model.cached_ids))
            return super().probs_for_positions(ids, start, temperature)

    prompt = draft.encode("The cat sat ")
    out = compare(draft, Watching(model), [prompt], [2], 6, temperature=0.0, prefill=prefill)
    plain_calls = len(out[2].call_log["plain"][0])          # round 0: plain goes first
    assert seen[0] == (prompt if prefill else [])
    assert seen[plain_calls] == (prompt if prefill else [])


def test_draft_step_seconds_times_one_step_per_context_with_the_right_method():
    made = []

    class Recording:
        def propose(self, context, temperature, rng):
            made.append(("propose", tuple(context)))
            return 0, [1.0]

        def argmax_next(self, context):
            made.append(("argmax", tuple(context)))
            return 0

    out = draft_step_seconds(Recording(), [[[1], [1, 2]], [[3]]], temperature=0.0)
    assert out.shape == (2,) and (out >= 0).all()
    assert made == [("argmax", (1,)), ("argmax", (1, 2)), ("argmax", (3,))]
    made.clear()
    draft_step_seconds(Recording(), [[[5]]], temperature=1.0)
    assert made == [("propose", (5,))]


def test_a_race_keeps_every_field_of_each_arms_runs(models):
    """race merges each arm's one-prompt comparisons into one (Comparison.extend): the call log too, so the
    in-situ r and the target's share are there to ask for; each arm's counts are those of its own runs."""
    from specdec.generation.race import Arm, race

    draft, target = models
    prompts = [target.encode(s) for s in ["The ", "If the ", "A class "]]
    out = race(target, [Arm("g2", lambda: draft, gamma=2), Arm("g3", lambda: draft, gamma=3)], prompts, 15)
    for name, g in (("g2", 2), ("g3", 3)):
        res = out[name].comparison
        runs = [speculative_generate(draft, target, p, 15, g) for p in prompts]
        assert res.calls == [r.target_calls for r in runs] and res.accepted == [sum(r.accepted) for r in runs]
        assert all(len(t) == 3 for t in res.times.values())
        assert [len(log) for log in res.call_log["spec"]] == [r.target_calls for r in runs]
        assert [len(log) for log in res.call_log["plain"]] == [15] * 3
        est, lo, hi = res.r()
        assert 0 < lo <= est <= hi
        assert 0 < res.target_share()[0] <= 1


def test_extend_appends_every_per_prompt_field():
    a, b = Comparison(2), Comparison(2)
    for c, k in ((a, 1), (b, 2)):
        for key in c.times:
            c.times[key].append(float(k))
        for name in ("accepted", "tested", "tokens", "calls", "positions", "drafts"):
            getattr(c, name).append(k)
        c.call_log["spec"].append([(3, 0.1 * k)])
        c.call_log["plain"].append([(1, 0.01 * k)])
    a.extend(b)
    assert a.gamma == 2 and all(t == [1.0, 2.0] for t in a.times.values())
    assert a.accepted == a.tested == a.tokens == a.calls == a.positions == a.drafts == [1, 2]
    assert a.call_log == {"spec": [[(3, 0.1)], [(3, 0.2)]], "plain": [[(1, 0.01)], [(1, 0.02)]]}


def test_a_race_counts_the_nodes_of_a_plain_drafts_full_tree(models):
    """A Draft without a tree of its own, raced as a tree (verify="tree"), drafts decode's full tree: its nodes
    count as drafted, so d is the nodes per call (positions - 1) and c is per node, not the whole drafting time."""
    from specdec.generation.race import Arm, race

    draft, target = models
    prompts = [target.encode(s) for s in ["The ", "If the "]]
    res = race(target, [Arm("full", lambda: draft, 2, 0.0, {"verify": "tree", "width": 2}, tree=True)], prompts,
               12)["full"]
    runs = [speculative_generate(draft, target, p, 12, 2, verify="tree", width=2) for p in prompts]
    assert res.comparison.calls == [r.target_calls for r in runs]
    assert res.drafted_per_call == pytest.approx(res.positions_per_call - 1)
    assert res.drafted_per_call == pytest.approx(sum(sum(r.scored) - r.target_calls for r in runs)
                                                 / sum(r.target_calls for r in runs))
    assert math.isfinite(res.c) and res.c > 0         # per node (no timing asserted: its size is the machine's)
