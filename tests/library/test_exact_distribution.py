"""One verify step emits a token distributed exactly as the target p (the losslessness theorem).

`specdec.theory.exact_output_distribution(p, q)` enumerates the step; these tests check it
against p on generated and hand-picked pairs, against a second enumeration in exact rational
arithmetic (fractions.Fraction: equality, not closeness), and against hand-worked cases.
`acceptance_rate(p, q)` is checked against the second formula 1 - TV(p, q).
Notation (Leviathan et al. 2023): target p, draft q.
"""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.theory import acceptance_rate, exact_output_distribution

TOL = 1e-12


# --- generated pairs -------------------------------------------------------------------------

# Small integer weights (0..4) give exact zeros and ties often; large ones give uneven rows.
_weight = st.one_of(st.integers(0, 4), st.integers(0, 10**6))


@st.composite
def weight_pairs(draw, max_vocab=12):
    """Two lists of non-negative integer weights over one vocabulary of V in 1..max_vocab, each with mass."""
    v = draw(st.integers(1, max_vocab))
    row = st.lists(_weight, min_size=v, max_size=v).filter(lambda w: sum(w) > 0)
    return draw(row), draw(row)


def to_floats(weights):
    total = sum(weights)
    return [w / total for w in weights]


def to_fractions(weights):
    total = sum(weights)
    return [Fraction(w, total) for w in weights]


def assert_close_rows(got, want, tol=TOL):
    assert len(got) == len(want)
    for y, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= tol, f"token {y}: got {g!r}, want {w!r}"


@pytest.mark.slow
@settings(max_examples=300)
@given(weight_pairs())
def test_output_distribution_is_p_on_generated_pairs(pair):
    p, q = map(to_floats, pair)
    assert_close_rows(exact_output_distribution(p, q), p)


# --- named edge cases ------------------------------------------------------------------------

EDGE_CASES = [
    # (p, q)
    ([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]),              # p == q: never rejects, residual has no mass (falls back to p)
    ([1.0], [1.0]),                                  # V = 1: the only token, always accepted
    ([0.0, 0.0, 0.6, 0.4], [0.7, 0.3, 0.0, 0.0]),    # disjoint supports: always rejects, residual == p
    ([0.0, 1.0, 0.0], [0.3, 0.3, 0.4]),              # one-hot p: only token 1 survives
    ([0.1, 0.6, 0.3], [0.0, 0.0, 1.0]),              # one-hot q: always drafts token 2
    ([0.5, 0.25, 0.125, 0.125], [0.25] * 4),         # q uniform
    ([0.25] * 4, [0.5, 0.25, 0.125, 0.125]),         # p uniform
    ([0.0, 1.0], [1.0, 0.0]),                        # one-hot p and q, disjoint
    ([0.4, 0.4, 0.2], [0.2, 0.4, 0.4]),              # ties in p and in q, p(1) == q(1)
]


@pytest.mark.parametrize("p, q", EDGE_CASES)
def test_output_distribution_is_p_on_edge_cases(p, q):
    assert_close_rows(exact_output_distribution(p, q), p)


def test_output_distribution_of_a_hand_worked_case():
    """p = [1/2, 1/4, 1/4], q = [1/4, 1/4, 1/2].

    x = 0 drafted w.p. 1/4, min(1, 2) = 1: emits 0 w.p. 1/4.
    x = 1 drafted w.p. 1/4, min(1, 1) = 1: emits 1 w.p. 1/4.
    x = 2 drafted w.p. 1/2, min(1, 1/2) = 1/2: emits 2 w.p. 1/4, rejects w.p. 1/4.
    residual = normalize(max(0, p - q)) = normalize([1/4, 0, 0]) = [1, 0, 0]: the 1/4 goes to 0.
    Total: [1/4 + 1/4, 1/4, 1/4] = [1/2, 1/4, 1/4] = p.
    Every number is a power of two, so float arithmetic is exact: compare with ==.
    """
    assert exact_output_distribution([0.5, 0.25, 0.25], [0.25, 0.25, 0.5]) == [0.5, 0.25, 0.25]


def test_output_distribution_does_not_mutate_its_inputs():
    p, q = [0.1, 0.6, 0.3], [0.5, 0.2, 0.3]
    exact_output_distribution(p, q)
    assert (p, q) == ([0.1, 0.6, 0.3], [0.5, 0.2, 0.3])


# --- an independent enumeration in exact arithmetic ------------------------------------------

def output_distribution_fractions(p, q):
    """P(emit y) for rational p, q, organised by output token y (the library loops over drafts x).

    P(emit y) = q(y) a(y) + P(reject) r(y), where a(x) = min(1, p(x)/q(x)) (0 if q(x) = 0,
    never drafted), P(reject) = 1 - sum_x q(x) a(x), r = normalize(max(0, p - q)) or p if that
    has no mass. Returns (distribution, P(accept)).
    """
    accept = [min(Fraction(1), px / qx) if qx else Fraction(0) for px, qx in zip(p, q)]
    p_accept = sum((qx * ax for qx, ax in zip(q, accept)), Fraction(0))
    excess = [max(Fraction(0), px - qx) for px, qx in zip(p, q)]
    mass = sum(excess, Fraction(0))
    residual = [e / mass for e in excess] if mass else list(p)
    out = [q[y] * accept[y] + (1 - p_accept) * residual[y] for y in range(len(p))]
    return out, p_accept


@pytest.mark.slow
@settings(max_examples=300)
@given(weight_pairs())
def test_exact_rational_enumeration_gives_p_exactly(pair):
    p, q = map(to_fractions, pair)
    out, p_accept = output_distribution_fractions(p, q)
    assert out == p  # exact equality of rationals: the theorem, no rounding involved
    assert p_accept == sum(min(px, qx) for px, qx in zip(p, q))  # P(accept) = beta
    # And the float library agrees with the exact answer.
    assert_close_rows(exact_output_distribution(*map(to_floats, pair)), [float(v) for v in out])


def test_rational_enumeration_of_a_hand_worked_case():
    """p = [1/10, 6/10, 3/10], q = [5/10, 2/10, 3/10] (the theory module's doctest pair).

    a = [min(1, 1/5), min(1, 3), min(1, 1)] = [1/5, 1, 1].
    accepted mass q * a = [1/10, 2/10, 3/10], so P(accept) = 6/10 and P(reject) = 4/10.
    residual = normalize([0, 4/10, 0]) = [0, 1, 0].
    P(emit) = [1/10, 2/10 + 4/10, 3/10] = [1/10, 6/10, 3/10] = p.
    """
    p = [Fraction(1, 10), Fraction(6, 10), Fraction(3, 10)]
    q = [Fraction(5, 10), Fraction(2, 10), Fraction(3, 10)]
    out, p_accept = output_distribution_fractions(p, q)
    assert out == p
    assert p_accept == Fraction(6, 10)


# --- acceptance rate: beta = sum min(p, q) = 1 - TV(p, q) ------------------------------------

@pytest.mark.slow
@settings(max_examples=300)
@given(weight_pairs())
def test_acceptance_rate_is_one_minus_total_variation(pair):
    p, q = map(to_floats, pair)
    tv = 0.5 * sum(abs(pi - qi) for pi, qi in zip(p, q))  # the second formula
    assert abs(acceptance_rate(p, q) - (1.0 - tv)) <= TOL
    # The identity itself, exactly: sum min(p, q) = 1 - sum max(0, p - q) = 1 - TV (sum p = sum q = 1).
    pf, qf = map(to_fractions, pair)
    assert sum(min(a, b) for a, b in zip(pf, qf)) == 1 - Fraction(1, 2) * sum(abs(a - b) for a, b in zip(pf, qf))


@pytest.mark.parametrize("p, q, beta", [
    ([0.1, 0.6, 0.3], [0.5, 0.2, 0.3], 0.6),     # min: 0.1 + 0.2 + 0.3; TV = (0.4 + 0.4 + 0) / 2 = 0.4
    ([0.5, 0.25, 0.25], [0.25, 0.25, 0.5], 0.75),  # min: 0.25 + 0.25 + 0.25; TV = (0.25 + 0 + 0.25) / 2
    ([0.2, 0.8], [0.2, 0.8], 1.0),               # p == q: TV = 0
    ([0.0, 1.0], [1.0, 0.0], 0.0),               # disjoint supports: TV = 1
    ([0.25] * 4, [1.0, 0.0, 0.0, 0.0], 0.25),    # one-hot q: beta = p(drafted token)
])
def test_acceptance_rate_hand_worked(p, q, beta):
    assert abs(acceptance_rate(p, q) - beta) <= TOL


# --- validation ------------------------------------------------------------------------------

@pytest.mark.parametrize("function", [exact_output_distribution, acceptance_rate])
@pytest.mark.parametrize("p, q, error, message", [
    ([0.5, 0.5], [1.0], ValueError, r"^q has 1 entries but p has 2$"),           # q shorter
    ([1.0], [0.5, 0.5], ValueError, r"^q has 2 entries but p has 1$"),           # q longer
    ([], [1.0], ValueError, r"^p is empty"),                                     # empty p
    ([0.5, 0.5], [1.5, -0.5], ValueError, r"^q\[1\] is -0.5, a negative probability"),  # negative entry
    ([2.0, 1.0], [0.5, 0.5], ValueError, r"^p sums to 3, not 1"),                # logits or weights
    ([0.5, float("nan")], [0.5, 0.5], ValueError, r"^p\[1\] is nan"),            # non-finite
    ("ab", [1.0], TypeError, r"^p must be a sequence"),                          # not a sequence
])
def test_bad_input_names_the_argument(function, p, q, error, message):
    with pytest.raises(error, match=message):
        function(p, q)
