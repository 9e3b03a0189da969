"""`specdec.softmax` (logits.py) and `residual_distribution` / `argmax` (residual.py).

References: hand-computed math.exp ratios, hand-worked residuals, and NumPy
implementations written here, compared on random inputs with hypothesis.
Notation: target p, draft q (Leviathan et al. 2023).
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec import argmax, residual_distribution, softmax
from specdec.logits import naive_softmax

# ---------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------


def test_softmax_hand_computed():
    """softmax([2, 1, 0]) = [e^2, e^1, 1] / (e^2 + e + 1) = [0.665241, 0.244728, 0.090031]."""
    total = math.e ** 2 + math.e + 1.0
    assert softmax([2.0, 1.0, 0.0]) == pytest.approx([math.e ** 2 / total, math.e / total, 1.0 / total], abs=1e-15)
    assert softmax([2.0, 1.0, 0.0]) == pytest.approx([0.665241, 0.244728, 0.090031], abs=1e-6)


def test_softmax_ratios_are_exp_of_logit_differences():
    """p_i / p_j = exp(z_i - z_j): e.g. exp(0.5 - (-1.25)) = exp(1.75)."""
    z = [0.5, -1.25, 3.0, 0.0]
    p = softmax(z)
    for i in range(4):
        for j in range(4):
            assert p[i] / p[j] == pytest.approx(math.exp(z[i] - z[j]), rel=1e-12)


def test_softmax_recovers_probabilities_from_their_logs():
    """The graded problem's example distribution: logits = log p, then softmax(logits) = p
    (mechanism 65%, layer 20%, pattern 10%, model 5%)."""
    p = [0.65, 0.20, 0.10, 0.05]
    assert softmax([math.log(v) for v in p]) == pytest.approx(p, abs=1e-15)


@pytest.mark.parametrize("z", [[0.0], [1.0, 2.0, 3.0], [-5.0, 5.0, 0.1, 0.2, 7.0]], ids=["V=1", "V=3", "V=5"])
def test_softmax_sums_to_one(z):
    assert math.fsum(softmax(z)) == pytest.approx(1.0, abs=1e-15)
    assert all(v > 0 for v in softmax(z))


@pytest.mark.parametrize("z, expected", [
    # huge positive: shifted by 1000 -> [0, -1] -> [1, e^-1] / (1 + e^-1)
    ([1000.0, 999.0], [1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))]),
    # huge negative: exp(-1000) underflows to 0 naively; shifted by -1000 it is fine
    ([-1000.0, -1001.0], [1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))]),
], ids=["overflow-side", "underflow-side"])
def test_softmax_stable_on_extreme_logits(z, expected):
    assert softmax(z) == pytest.approx(expected, abs=1e-15)


def test_naive_softmax_fails_where_stable_one_does_not():
    """Why the max shift matters: exp(1000) overflows, inf/inf = nan; exp(-1000) underflows, 0/0."""
    assert all(math.isnan(v) for v in naive_softmax([1000.0, 999.0]))
    with pytest.raises(ZeroDivisionError):
        naive_softmax([-1000.0, -1001.0])
    # on modest logits the two agree
    assert naive_softmax([2.0, 1.0, 0.0]) == pytest.approx(softmax([2.0, 1.0, 0.0]), abs=1e-15)


@pytest.mark.parametrize("c", [-1e6, -3.5, 0.0, 42.0, 1e6], ids=lambda c: f"c={c}")
def test_softmax_invariant_to_adding_a_constant(c):
    z = [0.3, -1.2, 2.5, 0.0]
    assert softmax([v + c for v in z]) == pytest.approx(softmax(z), abs=1e-9)


def test_softmax_temperature_hand_computed():
    """T = 2 on [2, 0]: [e^1, e^0] / (e + 1) = [0.731059, 0.268941]; T = 0.5: [e^4, 1] / (e^4 + 1)."""
    assert softmax([2.0, 0.0], temperature=2.0) == pytest.approx([math.e / (math.e + 1), 1 / (math.e + 1)],
                                                                 abs=1e-15)
    e4 = math.exp(4.0)
    assert softmax([2.0, 0.0], temperature=0.5) == pytest.approx([e4 / (e4 + 1), 1 / (e4 + 1)], abs=1e-15)


def test_softmax_small_temperature_approaches_one_hot():
    """As T -> 0+ the top token's share grows monotonically to 1 (greedy limit)."""
    z = [1.0, 3.0, 2.5, -1.0]
    tops = [softmax(z, temperature=t)[1] for t in (1.0, 0.5, 0.1, 0.01)]
    assert tops == sorted(tops) and tops[0] < 0.6
    assert tops[-1] == pytest.approx(1.0, abs=1e-20)  # exp(-50) ~ 2e-22


@pytest.mark.parametrize("z, expected", [
    ([1.0, 3.0, 2.5, -1.0], [0.0, 1.0, 0.0, 0.0]),   # argmax 1
    ([2.0, 2.0, 1.0], [1.0, 0.0, 0.0]),              # tie: lowest index
    ([-math.inf, 0.5, 0.5], [0.0, 1.0, 0.0]),        # masked token never wins; tie -> lower index
], ids=["one-hot", "tie-lowest-index", "masked-and-tie"])
def test_softmax_temperature_zero_is_greedy(z, expected):
    assert softmax(z, temperature=0) == expected


def test_softmax_large_temperature_approaches_uniform():
    z = [5.0, -3.0, 0.0, 1.0]
    assert softmax(z, temperature=1e9) == pytest.approx([0.25] * 4, abs=1e-8)


def test_softmax_minus_inf_logit_gets_zero_probability():
    """-inf is a masked token (allowed); its probability is exactly 0, the rest is softmax([0, 1])."""
    p = softmax([0.0, -math.inf, 1.0])
    assert p[1] == 0.0
    assert [p[0], p[2]] == pytest.approx(softmax([0.0, 1.0]), abs=1e-15)


def test_softmax_accepts_numpy_float32_input_returns_floats():
    p = softmax(np.array([1.0, 2.0], dtype=np.float32))
    assert all(type(v) is float for v in p)
    assert p == pytest.approx([1 / (1 + math.e), math.e / (1 + math.e)], abs=1e-15)


@pytest.mark.parametrize("logits, temperature, message", [
    ([], 1.0, r"logits is empty"),                                   # empty
    ([0.0, math.nan], 1.0, r"logits\[1\] is nan"),                   # NaN logit
    ([0.0, 1.0, math.inf], 1.0, r"logits\[2\] is inf"),              # +inf logit
    ([-math.inf, -math.inf], 1.0, r"every logit is -inf"),           # nothing choosable
    ([0.0, 1.0], -0.5, r"temperature must be .*>= 0"),        # negative temperature
    ([0.0, 1.0], math.nan, r"temperature must be .*>= 0"),    # NaN temperature
    ([0.0, 1.0], "1", r"temperature must be .*>= 0"),         # not a number
    ([0.0, 1.0], True, r"temperature must be .*>= 0"),        # bool is not a temperature
    # infinite T is refused, not mapped to its uniform limit: with a masked logit, (-inf - max) / inf is nan
    ([0.0, 1.0], math.inf, r"temperature must be a finite number >= 0, got inf"),
    ([0.0, -math.inf, 1.0], math.inf, r"temperature must be a finite number >= 0, got inf"),
], ids=["empty", "nan-logit", "plus-inf-logit", "all-minus-inf", "negative-T", "nan-T", "str-T", "bool-T",
        "inf-T", "inf-T-masked"])
def test_softmax_errors(logits, temperature, message):
    with pytest.raises(ValueError, match=message):
        softmax(logits, temperature=temperature)


def numpy_softmax(z, temperature):
    """Reference: a float64 NumPy softmax via log-sum-exp (np.logaddexp.reduce), not a max shift."""
    z = np.asarray(z, dtype=np.float64) / temperature
    return np.exp(z - np.logaddexp.reduce(z))


@pytest.mark.slow
@settings(max_examples=300)
@given(st.lists(st.floats(-500, 500), min_size=1, max_size=12), st.floats(0.05, 20.0))
def test_softmax_matches_numpy(z, temperature):
    ours = softmax(z, temperature=temperature)
    ref = numpy_softmax(z, temperature)
    assert np.allclose(ours, ref, rtol=1e-9, atol=1e-300)
    assert math.fsum(ours) == pytest.approx(1.0, abs=1e-12)
    # softmax is monotone: a larger logit never gets a smaller probability
    for i in range(len(z)):
        for j in range(len(z)):
            if z[i] > z[j]:
                assert ours[i] >= ours[j]


# ---------------------------------------------------------------------------
# residual_distribution and argmax
# ---------------------------------------------------------------------------


def test_residual_hand_worked():
    """p = [0.1, 0.6, 0.3], q = [0.5, 0.2, 0.3]:
    p - q = [-0.4, 0.4, 0.0] -> max(0, .) = [0, 0.4, 0] -> mass 0.4 -> [0, 1, 0]."""
    assert residual_distribution([0.1, 0.6, 0.3], [0.5, 0.2, 0.3]) == pytest.approx([0.0, 1.0, 0.0], abs=1e-15)


def test_residual_hand_worked_two_positive_entries():
    """p = [0.2, 0.45, 0.35], q = [0.6, 0.15, 0.25]:
    max(0, p - q) = [0, 0.30, 0.10] -> mass 0.40 -> [0, 0.75, 0.25]."""
    assert residual_distribution([0.2, 0.45, 0.35], [0.6, 0.15, 0.25]) == pytest.approx([0.0, 0.75, 0.25],
                                                                                         abs=1e-15)


def test_residual_falls_back_to_p_when_p_equals_q():
    """p == q: max(0, p - q) = 0 everywhere, 0/0 would be NaN (jaymody/speculative-sampling#5);
    the kit's convention returns p itself."""
    p = [0.1, 0.6, 0.3]
    out = residual_distribution(p, list(p))
    assert out == p and out is not p


def test_residual_disjoint_supports_is_p():
    """q has no overlap with p: max(0, p - q) = p, already normalised."""
    assert residual_distribution([0.0, 0.25, 0.75], [1.0, 0.0, 0.0]) == [0.0, 0.25, 0.75]


def test_residual_does_not_mutate_and_accepts_numpy():
    p, q = np.array([0.25, 0.75]), np.array([0.5, 0.5])
    out = residual_distribution(p, q)
    assert out == [0.0, 1.0] and all(type(v) is float for v in out)
    assert np.array_equal(p, [0.25, 0.75]) and np.array_equal(q, [0.5, 0.5])


def test_residual_length_mismatch_raises():
    with pytest.raises(ValueError, match=r"p has 2 entries but q has 3"):
        residual_distribution([0.5, 0.5], [0.2, 0.3, 0.5])


@pytest.mark.parametrize("row, expected", [
    ([0.7], 0),                       # single entry
    ([0.2, 0.4, 0.4], 1),             # tie -> lower index
    ([0.4, 0.2, 0.4], 0),             # tie across a gap
    ([0.0, 0.0, 0.0], 0),             # all equal
    ([0.1, 0.2, 0.3, 0.4], 3),        # max at the end
], ids=["single", "tie-adjacent", "tie-gap", "all-equal", "max-last"])
def test_argmax_cases(row, expected):
    assert argmax(row) == expected


def normalised(weights):
    w = np.asarray(weights, dtype=np.float64)
    return w / w.sum()


@st.composite
def distribution_pairs(draw):
    """Two rows over the same vocabulary; small integer weights make zeros, ties and p == q common."""
    vocab = draw(st.integers(1, 8))
    weights = st.lists(st.integers(0, 4), min_size=vocab, max_size=vocab).filter(any)
    p = normalised(draw(weights))
    q = p.copy() if draw(st.booleans()) and draw(st.booleans()) else normalised(draw(weights))
    return p, q


@pytest.mark.slow
@settings(max_examples=300)
@given(distribution_pairs())
def test_residual_matches_numpy(pair):
    p, q = pair
    excess = np.maximum(p - q, 0.0)
    ref = excess / excess.sum() if excess.sum() > 0 else p
    ours = residual_distribution(p.tolist(), q.tolist())
    assert np.allclose(ours, ref, rtol=1e-12, atol=1e-15)
    assert math.fsum(ours) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.slow
@settings(max_examples=300)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=10) | st.lists(st.floats(-1e6, 1e6), min_size=1,
                                                                        max_size=10))
def test_argmax_matches_numpy_lexsort(row):
    """Reference: sort by (-value, index) with np.lexsort (last key is primary) and take the first."""
    order = np.lexsort((np.arange(len(row)), -np.asarray(row, dtype=np.float64)))
    assert argmax(row) == int(order[0])
