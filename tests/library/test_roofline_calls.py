"""specdec.generation.roofline's whole-call measurements: call_cost_samples, call_cost_fit, fit_share, cost_steps.

The fit (its line, its step at n = 1, its misfit), the shares and the ratios are checked by hand and on synthetic
costs with known parameters, on both sides of what they decide; the sampler on a small random transformer, by
counting the positions each timed forward pass computes (timings are never asserted, only that they exist and are
positive).
"""

import numpy as np
import pytest

from specdec.generation import roofline
from specdec.models import transformer
from specdec.models.transformer import TransformerModel, init_params


from specdec.generation.measure import side


def test_fit_by_hand_two_points():
    # n = 1: 3 ms and 5 ms on two texts (mean 4); n = 3: 7 and 9 (mean 8): the line 2 + 2 n
    fit = roofline.call_cost_fit({1: [3.0, 5.0], 3: [7.0, 9.0]}, start=1)
    (fixed, lo, hi), (per, plo, phi) = fit.fixed, fit.per_position
    assert fixed == pytest.approx(2.0) and per == pytest.approx(2.0)
    assert lo <= fixed <= hi and plo <= per <= phi
    # every text has the same slope 2, so every resample does: a zero-width interval for the slope
    assert plo == pytest.approx(2.0) and phi == pytest.approx(2.0)
    assert fit.step is None and fit.misfit[1] == pytest.approx((0.0, 0.0, 0.0)) and fit.misses() == []


def test_the_fit_from_two_positions_reports_the_step_at_one():
    # cost(n) = 1 + 0.1 n for n >= 2, and cost(1) = 0.5 (a cheaper kernel for one row): the line from n = 2 is
    # exact, the step is 0.5 - 1.1 = -0.6, and the misfit at n = 1 is -0.6 / 1.1; a line through every n misses
    costs = {n: np.array([1 + 0.1 * n + e for e in (-0.01, 0.0, 0.01)]) for n in range(2, 8)}
    costs[1] = np.array([0.49, 0.5, 0.51])
    fit = roofline.call_cost_fit(costs)
    assert fit.start == 2 and fit.fixed[0] == pytest.approx(1.0) and fit.per_position[0] == pytest.approx(0.1)
    assert fit.step[0] == pytest.approx(-0.6) and side(fit.step, 0) == "below"
    assert fit.misfit[1][0] == pytest.approx(-0.6 / 1.1) and fit.misses() == []
    assert fit.worst()[0] >= 2 and abs(fit.worst()[1][0]) < 1e-9
    assert fit.line(4) == pytest.approx(1.4)
    everywhere = roofline.call_cost_fit(costs, start=1)
    assert everywhere.step is None and everywhere.misses()                     # the straight line misses somewhere


def test_a_sawtooth_shows_in_the_misfit_and_the_steps():
    # four rows cheaper than three, eight than seven: the kernel's groups of rows
    rng = np.random.default_rng(3)
    base = {2: 0.7, 3: 0.93, 4: 0.65, 5: 0.87, 6: 0.91, 7: 1.10, 8: 0.88, 9: 1.06, 1: 0.35}
    costs = {n: c + rng.normal(0, 0.01, 20) for n, c in base.items()}
    fit = roofline.call_cost_fit(costs)
    assert 3 in fit.misses() and 4 in fit.misses() and 8 in fit.misses()
    steps = roofline.cost_steps(costs)
    falls = [n for n, d in steps.items() if side(d, 0) == "below"]
    assert falls == [3, 7] and side(steps[1], 0) == "above"
    assert steps[3][0] == pytest.approx((costs[4] - costs[3]).mean())


def test_the_split_of_a_fit_is_exact_and_its_share_has_an_interval():
    # model = twin + width, text by text: the line through the differences is the difference of the lines
    rng = np.random.default_rng(1)
    twin = {n: 0.3 + 0.01 * n + rng.normal(0, 0.01, 15) for n in range(1, 10)}
    model = {n: twin[n] + 0.6 + 0.05 * n + rng.normal(0, 0.02, 15) for n in range(1, 10)}
    width = {n: model[n] - twin[n] for n in model}
    f_model, f_twin, f_width = (roofline.call_cost_fit(c) for c in (model, twin, width))
    assert f_model.fixed[0] == pytest.approx(f_twin.fixed[0] + f_width.fixed[0])
    assert f_model.per_position[0] == pytest.approx(f_twin.per_position[0] + f_width.per_position[0])
    share = roofline.fit_share(twin, model)
    assert share[0] == pytest.approx(f_twin.fixed[0] / f_model.fixed[0]) and share[1] <= share[0] <= share[2]
    assert side(share, 0.5) == "below"                                    # 0.3 of 0.9: a third
    assert side(roofline.fit_share(model, twin), 1.0) == "above"
    with pytest.raises(ValueError, match="the same texts"):
        roofline.fit_share({n: v[:5] for n, v in twin.items()}, model)


def test_fit_recovers_known_parameters_from_noisy_synthetic_costs():
    rng = np.random.default_rng(0)
    fixed, per, texts = 0.8e-3, 0.12e-3, 40
    level = rng.normal(0, 0.05e-3, texts)                               # each text's own offset (load, length)
    costs = {n: fixed + n * per + level + rng.normal(0, 0.02e-3, texts) for n in range(1, 10)}
    fit = roofline.call_cost_fit(costs)
    (f, flo, fhi), (p, plo, phi) = fit.fixed, fit.per_position
    assert flo < fixed < fhi and plo < per < phi
    assert side(fit.step, 0) == "contains"                              # no step at n = 1 in these costs
    assert abs(f - fixed) < 0.05e-3 and abs(p - per) < 0.01e-3
    assert fhi - flo < 0.1e-3                                           # 40 texts pin it down


def test_ratios_are_ratios_of_sums_with_intervals():
    costs = {1: [1.0, 3.0], 2: [2.0, 4.0], 5: [3.0, 9.0]}
    r = roofline.call_cost_ratios(costs)
    assert sorted(r) == [1, 4]
    assert r[1][0] == pytest.approx(6.0 / 4.0) and r[4][0] == pytest.approx(12.0 / 4.0)
    assert r[4][1] == pytest.approx(3.0) and r[4][2] == pytest.approx(3.0)   # both texts have ratio 3
    with pytest.raises(ValueError, match="no n = 1"):
        roofline.call_cost_ratios({2: [1.0, 2.0], 3: [1.0, 2.0]})
    with pytest.raises(ValueError, match="at least 2 values of n"):
        roofline.call_cost_fit({1: [1.0, 2.0], 2: [1.0, 2.0]})


def test_samples_time_calls_that_compute_n_positions_on_a_cached_prefix(monkeypatch):
    params = init_params(V=20, context=40, d=16, n_layer=2, seed=0)
    model = TransformerModel(params, n_head=2, context=40, hop=20)
    computed = []
    real = transformer.forward

    def counting(weights, layers, tokens, *args):
        computed.append(len(tokens))
        return real(weights, layers, tokens, *args)

    monkeypatch.setattr(transformer, "forward", counting)
    rng = np.random.default_rng(1)
    texts = [rng.integers(0, 20, 30).tolist() for _ in range(3)]
    ticks = []

    def clock():                                   # marks where each timed call starts and ends in `computed`
        ticks.append(len(computed))
        return 0.0

    costs = roofline.call_cost_samples(model, texts, positions=[1, 2, 4], cuts=3, seed=0, clock=clock)
    assert sorted(costs) == [1, 2, 4] and all(v.shape == (3,) for v in costs.values())
    timed = [computed[a:b] for a, b in zip(ticks[::2], ticks[1::2])]
    assert len(timed) == 3 * 3 * 3                 # 3 texts x 3 values of n x 3 cut points
    assert sorted(map(tuple, timed)) == [(1,)] * 9 + [(2,)] * 9 + [(4,)] * 9   # ONE pass of exactly n positions
    wall = roofline.call_cost_samples(model, texts[:2], positions=[1, 3], cuts=2)
    assert all((v > 0).all() for v in wall.values())
    # two models, interleaved: each timed call still computes exactly n positions of its own model
    computed.clear()
    ticks.clear()
    twin = TransformerModel(init_params(V=20, context=40, d=4, n_layer=2, seed=1), n_head=2, context=40, hop=20)
    both = roofline.call_cost_samples({"model": model, "twin": twin}, texts, positions=[1, 2], cuts=2, clock=clock)
    assert sorted(both) == ["model", "twin"] and all(v.shape == (3,) for c in both.values() for v in c.values())
    timed = [computed[a:b] for a, b in zip(ticks[::2], ticks[1::2])]
    assert sorted(map(tuple, timed)) == [(1,)] * 12 + [(2,)] * 12        # 2 models x 3 texts x 2 cuts per n
    with pytest.raises(ValueError, match="cut points"):
        roofline.call_cost_samples(model, [texts[0][:8]], positions=[1, 9], cuts=4)
