"""The graded rule `verify_speculative_tokens`: the graded problem's examples, hand-worked cases, edges, properties.

References, each independent of the code under test:
- the graded problem's three examples, verbatim (`GRADED_EXAMPLES` in tests/helpers.py; the problem's full
  statement, which is the law for this function, is exercises/ex01_verify/README.md);
- hand-worked arithmetic written out in each docstring;
- a second implementation below (`reference_verify`), written with NumPy arrays
  and a different argmax, compared on random valid inputs with hypothesis.
Notation: target p, draft q, K drafted tokens, uniforms u (Leviathan et al. 2023).
Bad inputs live in test_validation.py.
"""

import copy

import numpy as np
import pytest
from helpers import GRADED_EXAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec import verify_speculative_tokens


def result(accepted, bonus):
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}


# ---------------------------------------------------------------------------
# The graded problem's examples, verbatim
# ---------------------------------------------------------------------------

def test_graded_example_1_all_accepted_with_bonus():
    """Step 0: x=2, p/q = 0.8/0.7 > 1, accepted. Step 1: x=1, p/q = 0.7/0.6 > 1, accepted.
    All K=2 accepted and row 2 exists: bonus = argmax [0.5, 0.3, 0.2] = 0."""
    title, args, expected = GRADED_EXAMPLES[0]
    assert title == "All tokens accepted with bonus token"
    assert verify_speculative_tokens(*args) == expected == result([2, 1], 0)


def test_graded_example_2_title_is_wrong_output_is_right():
    """The problem titles this "Second token rejected with resample", but the rule says otherwise.

    Step 0: x=0, ratio 0.9/0.8 > 1 -> min(1, .) = 1, u=0.5 <= 1: accepted.
    Step 1: x=1, ratio 0.9/0.1 = 9 -> min(1, 9) = 1, u=0.8 <= 1: accepted (not rejected!).
    target_probs has only 2 rows, so there is no row K=2: bonus_token is None.
    The problem's expected output agrees with this; only the title is mislabelled.
    """
    title, args, expected = GRADED_EXAMPLES[1]
    assert title == "Second token rejected with resample"
    assert verify_speculative_tokens(*args) == expected == result([0, 1], None)


def test_graded_example_3_length_mismatch_raises():
    """One drafted token but two random samples: ValueError (the problem's constraint)."""
    title, args, expected = GRADED_EXAMPLES[2]
    assert expected is ValueError
    with pytest.raises(ValueError, match=r"len\(random_samples\) is 2 but len\(draft_tokens\) is 1"):
        verify_speculative_tokens(*args)


# ---------------------------------------------------------------------------
# Hand-worked rejection
# ---------------------------------------------------------------------------

def test_hand_worked_rejection_at_step_1():
    """K=2, drafts [2, 0], u = [0.9, 0.7].

    Step 0: x=2, q0(2)=0.5, p0(2)=0.5, ratio 1 -> u=0.9 <= 1: accept 2.
    Step 1: x=0, q1(0)=0.6, p1(0)=0.2, ratio 0.2/0.6 = 0.333... -> u=0.7 > 0.333: reject.
      residual: max(0, p1 - q1) = max(0, [0.2-0.6, 0.45-0.15, 0.35-0.25]) = [0, 0.30, 0.10]
      mass 0.40, normalised [0, 0.75, 0.25] -> argmax = 1, and verification stops.
    Row 2 ([0, 0, 1], argmax 2) would be the bonus only if all were accepted: unused.
    """
    out = verify_speculative_tokens(
        [2, 0],
        [[0.2, 0.3, 0.5], [0.6, 0.15, 0.25]],
        [[0.1, 0.4, 0.5], [0.2, 0.45, 0.35], [0.0, 0.0, 1.0]],
        [0.9, 0.7],
    )
    assert out == result([2], 1)


def test_hand_worked_rejection_higher_residual_beats_lower_index():
    """K=1, x=0, q=[0.5, 0.25, 0.25], p=[0.125, 0.125, 0.75], u=0.5.

    ratio 0.125/0.5 = 0.25 < u=0.5: reject.
    residual: max(0, [-0.375, -0.125, 0.5]) = [0, 0, 0.5] -> [0, 0, 1] -> argmax 2.
    """
    out = verify_speculative_tokens([0], [[0.5, 0.25, 0.25]], [[0.125, 0.125, 0.75]], [0.5])
    assert out == result([], 2)


# ---------------------------------------------------------------------------
# Edge cases the graded problem leaves open (each named)
# ---------------------------------------------------------------------------

def test_k0_with_bonus_row():
    """K = 0 and one target row: nothing to verify, bonus = argmax [0.2, 0.5, 0.3] = 1."""
    assert verify_speculative_tokens([], [], [[0.2, 0.5, 0.3]], []) == result([], 1)


def test_k0_without_bonus_row():
    """K = 0 and no target row: nothing at all to emit, bonus None."""
    assert verify_speculative_tokens([], [], [], []) == result([], None)


@pytest.mark.parametrize("row, expected", [
    ([0.4, 0.4, 0.2], 0),                # two-way tie at the top: lower index
    ([0.2, 0.4, 0.4], 1),                # tie not at index 0: lower of the tied
    ([0.25, 0.25, 0.25, 0.25], 0),       # all tied
    ([0.125, 0.375, 0.125, 0.375], 1),   # tie of the maximum with a tie below it
    ([0.3, 0.2, 0.5], 2),                # no tie: the larger wins even at a higher index
], ids=["tie-first", "tie-middle", "all-tied", "two-ties", "no-tie"])
def test_bonus_row_ties_go_to_lower_index(row, expected):
    """All K=1 accepted (p == q), then bonus = argmax of row 1; ties -> lower index."""
    # p == q at step 0 means ratio 1: accepted for any u; the bonus then comes from target_probs[1] = row.
    out = verify_speculative_tokens([0], [row], [row, row], [0.5])
    assert out == result([0], expected)


@pytest.mark.parametrize("q, p, expected", [
    # x=0 has p(0)=0 -> rejected; residual max(0, p - q) = [0, 0.5, 0.5]: tie -> 1
    ([1.0, 0.0, 0.0], [0.0, 0.5, 0.5], 1),
    # ratio 0.125/0.5 = 0.25 < 0.5: reject; residual [0, 0.125, 0.125, 0.125] (exact in binary): tie -> 1
    ([0.5, 0.25, 0.0, 0.25], [0.125, 0.375, 0.125, 0.375], 1),
    # residual [0, 0, 0.25, 0.25]: the tie starts at index 2
    ([0.75, 0.25, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25], 2),
], ids=["tie-after-zero-p", "three-way-tie", "tie-at-end"])
def test_residual_ties_go_to_lower_index(q, p, expected):
    """Rejection at step 0 with u = 0.5; the residual's maximum is tied (values exact in binary)."""
    assert verify_speculative_tokens([0], [q], [p], [0.5]) == result([], expected)


def test_rejection_at_step_0_stops_later_steps_never_used():
    """Step 0: x=0, q=[0.75, 0.25], p=[0.25, 0.75], ratio 1/3 < u=0.5: reject.
    residual max(0, [-0.5, 0.5]) = [0, 1] -> bonus 1, and verification stops.

    Two different continuations for steps 1, 2 (rows, tokens, samples) that would each
    give a different answer if they were consulted must not change the output.
    """
    step0_q, step0_p = [0.75, 0.25], [0.25, 0.75]
    # continuation A: would accept 0, 1 and take bonus 0 from row 3
    a = verify_speculative_tokens([0, 0, 1], [step0_q, [0.5, 0.5], [0.5, 0.5]],
                                  [step0_p, [0.5, 0.5], [0.5, 0.5], [1.0, 0.0]], [0.5, 0.0, 0.0])
    # continuation B: would reject step 1 (p(1) = 0) with residual argmax 0
    b = verify_speculative_tokens([0, 1, 0], [step0_q, [0.5, 0.5], [1.0, 0.0]],
                                  [step0_p, [1.0, 0.0], [0.0, 1.0]], [0.5, 1.0, 1.0])
    assert a == b == result([], 1)
    # sanity check that the continuations really differ when they are reached (step 0 accepted, u=0)
    a_reached = verify_speculative_tokens([0, 0, 1], [step0_q, [0.5, 0.5], [0.5, 0.5]],
                                          [step0_p, [0.5, 0.5], [0.5, 0.5], [1.0, 0.0]], [0.0, 0.0, 0.0])
    b_reached = verify_speculative_tokens([0, 1, 0], [step0_q, [0.5, 0.5], [1.0, 0.0]],
                                          [step0_p, [1.0, 0.0], [0.0, 1.0]], [0.0, 1.0, 1.0])
    assert a_reached == result([0, 0, 1], 0)
    assert b_reached == result([0], 0)


@pytest.mark.parametrize("u, expected", [
    (0.0, result([0], 1)),              # u = 0: 0 <= 0 holds, the graded rule's <= accepts
    (1e-300, result([], 1)),            # any u > 0: ratio 0 < u, rejected; residual [0, 1] -> 1
    (0.5, result([], 1)),
    (1.0, result([], 1)),
], ids=["u=0-accepted", "u-tiny-rejected", "u=0.5-rejected", "u=1-rejected"])
def test_target_gives_drafted_token_zero_probability(u, expected):
    """p(x) = 0 -> ratio 0. With row 1 present, an acceptance takes bonus argmax [0.25, 0.75] = 1."""
    out = verify_speculative_tokens([0], [[0.5, 0.5]], [[0.0, 1.0], [0.25, 0.75]], [u])
    assert out == expected


@pytest.mark.parametrize("u, accepted", [
    (0.5, True),                    # u == p/q = 0.25/0.5 exactly: <= accepts
    (np.nextafter(0.5, 1.0), False),  # one ulp above the ratio: rejected
    (np.nextafter(0.5, 0.0), True),   # one ulp below: accepted
], ids=["u-equals-ratio", "u-ulp-above", "u-ulp-below"])
def test_boundary_u_equal_to_ratio(u, accepted):
    """p = [0.25, 0.75], q = [0.5, 0.5], x = 0: ratio 0.25/0.5 = 0.5 exactly in binary.
    On rejection the residual is max(0, [-0.25, 0.25]) -> [0, 1] -> bonus 1."""
    out = verify_speculative_tokens([0], [[0.5, 0.5]], [[0.25, 0.75]], [float(u)])
    assert out == (result([0], None) if accepted else result([], 1))


@pytest.mark.parametrize("u", [0.0, 0.1, 0.5, 0.999999, 1.0], ids=lambda u: f"u={u}")
def test_p_equals_q_always_accepted(u):
    """p == q: every ratio is exactly 1, so u <= 1 accepts every step for every u in [0, 1].
    Bonus = argmax row 3 = [0.1, 0.2, 0.7] -> 2."""
    rows = [[0.1, 0.6, 0.3], [0.3, 0.3, 0.4], [0.2, 0.2, 0.6]]
    out = verify_speculative_tokens([1, 0, 2], rows, rows + [[0.1, 0.2, 0.7]], [u, u, u])
    assert out == result([1, 0, 2], 2)


def test_disjoint_supports_always_rejected():
    """q = [0.5, 0.5, 0, 0], p = [0, 0, 0.25, 0.75]: p(x) = 0 for every draftable x.
    Any u > 0 rejects; residual = max(0, p - q) = p -> argmax 3."""
    q, p = [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.25, 0.75]
    for x in (0, 1):
        assert verify_speculative_tokens([x], [q], [p], [0.01]) == result([], 3)


def test_target_longer_than_k_plus_1_extra_rows_ignored():
    """K=1 accepted (p == q), bonus from row 1 = argmax [0.2, 0.8] = 1; rows 2, 3 (argmax 0) unused.
    The extra rows are still validated: see test_validation.py."""
    out = verify_speculative_tokens([0], [[0.5, 0.5]],
                                    [[0.5, 0.5], [0.2, 0.8], [0.9, 0.1], [1.0, 0.0]], [0.3])
    assert out == result([0], 1)


def test_residual_with_no_mass_falls_back_to_p():
    """Rows that pass the 1e-4 sum tolerance without being exact: q = [0.50004, 0.50004].
    x=0: ratio 0.5/0.50004 < u = 0.99999999: reject. max(0, p - q) = [0, 0] has no mass,
    so the kit's convention falls back to p = [0.5, 0.5]: argmax with tie -> 0."""
    out = verify_speculative_tokens([0], [[0.50004, 0.50004]], [[0.5, 0.5]], [0.99999999])
    assert out == result([], 0)


def test_vocabulary_of_one_token():
    """V = 1: q = p = [1.0], every draft is token 0 with ratio 1; bonus argmax [1.0] = 0."""
    out = verify_speculative_tokens([0, 0], [[1.0], [1.0]], [[1.0], [1.0], [1.0]], [1.0, 0.3])
    assert out == result([0, 0], 0)


def test_random_sample_equal_to_one_allowed():
    """u = 1.0 is accepted by the validator; it accepts only where p(x) >= q(x).
    Step 0: ratio 0.75/0.5 -> 1, accepted. Step 1: ratio 0.25/0.5 = 0.5 < 1, rejected,
    residual max(0, [0.75 - 0.5, 0.25 - 0.5]) = [0.25, 0] -> bonus 0."""
    out = verify_speculative_tokens([0, 1], [[0.5, 0.5], [0.5, 0.5]],
                                    [[0.75, 0.25], [0.75, 0.25]], [1.0, 1.0])
    assert out == result([0], 0)


# ---------------------------------------------------------------------------
# Types, NumPy inputs, no mutation
# ---------------------------------------------------------------------------

EXAMPLE_1 = GRADED_EXAMPLES[0][1]
REJECT = ([2, 0], [[0.2, 0.3, 0.5], [0.6, 0.15, 0.25]],
          [[0.1, 0.4, 0.5], [0.2, 0.45, 0.35], [0.0, 0.0, 1.0]], [0.9, 0.7])


def assert_plain_result(out, accepted, bonus):
    assert type(out) is dict and list(out) == ["accepted_tokens", "bonus_token", "acceptance_count"]
    assert type(out["accepted_tokens"]) is list
    assert all(type(t) is int for t in out["accepted_tokens"])
    assert type(out["acceptance_count"]) is int
    assert bonus is None or type(out["bonus_token"]) is int
    assert out == result(accepted, bonus)


@pytest.mark.parametrize("token_dtype", [np.int64, np.int32, np.uint8], ids=["int64", "int32", "uint8"])
@pytest.mark.parametrize("prob_dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("case, accepted, bonus", [
    (EXAMPLE_1, [2, 1], 0),   # all accepted, bonus from row K
    (REJECT, [2], 1),      # rejection, bonus from the residual
], ids=["example1", "rejection"])
def test_numpy_inputs_give_plain_python_ints(case, accepted, bonus, token_dtype, prob_dtype):
    """Same answers as the list inputs (hand-worked above); every int is a Python int."""
    tokens, q, p, u = case
    out = verify_speculative_tokens(np.array(tokens, dtype=token_dtype), np.array(q, dtype=prob_dtype),
                                    np.array(p, dtype=prob_dtype), np.array(u, dtype=prob_dtype))
    assert_plain_result(out, accepted, bonus)


def test_numpy_scalars_inside_lists_give_plain_python_ints():
    """Lists of NumPy scalars (np.int64 tokens, np.float32 entries) also give Python ints."""
    tokens, q, p, u = EXAMPLE_1
    out = verify_speculative_tokens([np.int64(t) for t in tokens],
                                    [[np.float32(v) for v in row] for row in q],
                                    [[np.float32(v) for v in row] for row in p],
                                    [np.float64(v) for v in u])
    assert_plain_result(out, [2, 1], 0)


def test_tuples_accepted_and_plain_result():
    tokens, q, p, u = EXAMPLE_1
    out = verify_speculative_tokens(tuple(tokens), tuple(map(tuple, q)), tuple(map(tuple, p)), tuple(u))
    assert_plain_result(out, [2, 1], 0)


@pytest.mark.parametrize("case", [EXAMPLE_1, REJECT], ids=["example1", "rejection"])
def test_inputs_not_mutated(case):
    before = copy.deepcopy(case)
    tokens, q, p, u = case
    verify_speculative_tokens(tokens, q, p, u)
    assert (tokens, q, p, u) == before


def test_numpy_inputs_not_mutated():
    tokens, q, p, u = (np.array(a) for a in REJECT)
    before = [a.copy() for a in (tokens, q, p, u)]
    verify_speculative_tokens(tokens, q, p, u)
    for a, b in zip((tokens, q, p, u), before):
        assert np.array_equal(a, b) and a.dtype == b.dtype


def test_float32_softmax_rows_off_by_rounding_pass():
    """float32 softmax rows over V=4096 do not sum to exactly 1 (off by ~1e-6 here, checked),
    yet are within the 1e-4 tolerance. With p == q every step is accepted (ratio exactly 1),
    and the bonus is the argmax of row K, as NumPy's np.argmax says (it keeps the first max)."""
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4096)).astype(np.float32)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    rows = e / e.sum(axis=1, keepdims=True, dtype=np.float32)
    sums = [float(np.sum(r, dtype=np.float64)) for r in rows]
    assert any(s != 1.0 for s in sums) and all(abs(s - 1.0) < 1e-4 for s in sums)
    draft = [int(np.argmax(r)) for r in rows[:2]]
    out = verify_speculative_tokens(draft, rows[:2], rows, [0.999, 0.999])
    assert_plain_result(out, draft, int(np.argmax(rows[2])))


# ---------------------------------------------------------------------------
# Property test: a second implementation written differently (NumPy)
# ---------------------------------------------------------------------------

def reference_verify(tokens, q, p, u):
    """The graded rule on NumPy arrays: vectorised acceptance tests, then the first failure.

    Differs from the library on purpose: all K acceptance tests are computed at once
    (np.minimum over a fancy-indexed ratio), the first rejection is found with
    np.flatnonzero, and the argmax takes the lowest index among the maxima of the
    unnormalised excess (normalising by a positive mass does not move the argmax).
    """
    q, p = np.asarray(q, dtype=np.float64), np.asarray(p, dtype=np.float64)
    tokens = np.asarray(tokens, dtype=np.int64)
    u = np.asarray(u, dtype=np.float64)
    k = len(tokens)
    steps = np.arange(k)
    accept = u <= np.minimum(1.0, p[steps, tokens] / q[steps, tokens]) if k else np.zeros(0, bool)
    rejected = np.flatnonzero(~accept)

    def first_max(row):
        return int(np.flatnonzero(row == row.max())[0])

    if rejected.size:
        i = int(rejected[0])
        excess = np.maximum(p[i] - q[i], 0.0)
        bonus = first_max(excess if excess.sum() > 0 else p[i])
        return result([int(t) for t in tokens[:i]], bonus)
    bonus = first_max(p[k]) if len(p) > k else None
    return result([int(t) for t in tokens], bonus)


def rows(n, vocab):
    """n probability rows over `vocab` tokens: small integer weights, so exact zeros and exact ties
    are common, normalised by their sum; or continuous weights for general values."""
    small = st.lists(st.integers(0, 4), min_size=vocab, max_size=vocab).filter(any)
    wide = st.lists(st.floats(0.0, 1.0, allow_subnormal=False), min_size=vocab, max_size=vocab).filter(
        lambda w: sum(w) > 1e-3)
    row = st.one_of(small, wide).map(lambda w: [x / sum(w) for x in w])
    return st.lists(row, min_size=n, max_size=n)


@st.composite
def verify_inputs(draw):
    k = draw(st.integers(0, 6))
    vocab = draw(st.integers(1, 8))
    q = draw(rows(k, vocab))
    p = draw(rows(k + draw(st.integers(0, 2)), vocab))  # K rows (no bonus), K + 1, or one extra
    tokens = [draw(st.sampled_from([j for j, v in enumerate(row) if v > 0])) for row in q]
    u = []
    for i, x in enumerate(tokens):
        ratio = min(1.0, p[i][x] / q[i][x])
        # boundary values: 0, 1, exactly the ratio (accepted by <=), and one ulp either side
        u.append(draw(st.one_of(
            st.floats(0.0, 1.0),
            st.sampled_from([0.0, 1.0, ratio,
                             float(np.nextafter(ratio, 0.0)), min(1.0, float(np.nextafter(ratio, 2.0)))]))))
    return tokens, q, p, u


@pytest.mark.slow
@settings(max_examples=400)
@given(verify_inputs())
def test_matches_numpy_reference(inputs):
    tokens, q, p, u = inputs
    assert verify_speculative_tokens(tokens, q, p, u) == reference_verify(tokens, q, p, u)


@pytest.mark.slow
@settings(max_examples=100)
@given(verify_inputs())
def test_accepted_prefix_invariants(inputs):
    """Structural facts independent of any implementation: the output is a prefix of the draft,
    the count is its length, a rejection always carries a bonus, and the bonus is a vocab id."""
    tokens, q, p, u = inputs
    out = verify_speculative_tokens(tokens, q, p, u)
    n = out["acceptance_count"]
    assert out["accepted_tokens"] == tokens[:n] and 0 <= n <= len(tokens)
    if n < len(tokens) or len(p) > len(tokens):
        assert out["bonus_token"] is not None and 0 <= out["bonus_token"] < len(p[0])
    else:
        assert out["bonus_token"] is None
