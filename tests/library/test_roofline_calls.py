"""specdec.generation.roofline's whole-call measurements: call_cost_samples, call_cost_fit, call_cost_ratios.

The fit and the ratios are checked by hand and on synthetic costs with known parameters; the sampler on a
small random transformer, by counting the positions each timed forward pass computes (timings are never
asserted, only that they exist and are positive).
"""

import numpy as np
import pytest

from specdec.generation import roofline
from specdec.models import transformer
from specdec.models.transformer import TransformerModel, init_params


def test_fit_by_hand_two_points():
    # n = 1: 3 ms and 5 ms on two texts (mean 4); n = 3: 7 and 9 (mean 8): the line 2 + 2 n
    (fixed, lo, hi), (per, plo, phi) = roofline.call_cost_fit({1: [3.0, 5.0], 3: [7.0, 9.0]})
    assert fixed == pytest.approx(2.0) and per == pytest.approx(2.0)
    assert lo <= fixed <= hi and plo <= per <= phi
    # every text has the same slope 2, so every resample does: a zero-width interval for the slope
    assert plo == pytest.approx(2.0) and phi == pytest.approx(2.0)


def test_fit_recovers_known_parameters_from_noisy_synthetic_costs():
    rng = np.random.default_rng(0)
    fixed, per, texts = 0.8e-3, 0.12e-3, 40
    level = rng.normal(0, 0.05e-3, texts)                               # each text's own offset (load, length)
    costs = {n: fixed + n * per + level + rng.normal(0, 0.02e-3, texts) for n in range(1, 10)}
    (f, flo, fhi), (p, plo, phi) = roofline.call_cost_fit(costs)
    assert flo < fixed < fhi and plo < per < phi
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
        roofline.call_cost_fit({1: [1.0, 2.0]})


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
    with pytest.raises(ValueError, match="cut points"):
        roofline.call_cost_samples(model, [texts[0][:8]], positions=[1, 9], cuts=4)
