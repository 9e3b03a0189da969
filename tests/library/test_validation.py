"""Bad input to `verify_speculative_tokens`: the exception type and a message naming the argument and position.

Convention (specdec/_checks.py): wrong types raise TypeError, wrong values
(lengths, ranges, sums) raise ValueError; the message starts from the argument
name with its index, e.g. "draft_probs[1][0] is nan: probabilities must be finite".
Every case below starts from one valid input and breaks exactly one thing.
"""

import math

import numpy as np
import pytest
from helpers import GRADED_EXAMPLES

from specdec import verify_speculative_tokens

# A valid K=2, V=3 input: the graded problem's example 1 (its answer is checked in test_verify.py);
# each case below replaces one argument, so it breaks exactly one thing.
VALID = dict(zip(["draft_tokens", "draft_probs", "target_probs", "random_samples"], GRADED_EXAMPLES[0][1]))
EXAMPLE_1_ANSWER = GRADED_EXAMPLES[0][2]
Q, P = VALID["draft_probs"], VALID["target_probs"]


def call(**changes):
    return verify_speculative_tokens(**{**VALID, **changes})


CASES = [
    # --- lengths (the graded problem: mismatched lengths raise ValueError) ---
    pytest.param({"draft_probs": Q[:1]}, ValueError, r"len\(draft_probs\) is 1 but len\(draft_tokens\) is 2",
                 id="draft_probs-too-short"),
    pytest.param({"draft_probs": Q + [[1 / 3] * 3]}, ValueError, r"len\(draft_probs\) is 3",
                 id="draft_probs-too-long"),
    pytest.param({"random_samples": [0.5]}, ValueError, r"len\(random_samples\) is 1 but len\(draft_tokens\) is 2",
                 id="random_samples-too-short"),
    pytest.param({"random_samples": [0.5, 0.4, 0.3]}, ValueError, r"len\(random_samples\) is 3",
                 id="random_samples-too-long"),
    pytest.param({"target_probs": P[:1]}, ValueError, r"len\(target_probs\) is 1 but len\(draft_tokens\) is 2",
                 id="target_probs-too-short"),
    # --- row shapes ---
    pytest.param({"target_probs": [P[0], [0.3, 0.7], P[2]]}, ValueError,
                 r"target_probs\[1\] has 2 entries but target_probs\[0\] has 3", id="ragged-target-rows"),
    pytest.param({"target_probs": P + [[0.5, 0.5]]}, ValueError,
                 r"target_probs\[3\] has 2 entries", id="ragged-extra-target-row"),  # rows past K+1 validated too
    pytest.param({"draft_probs": [Q[0], [0.5, 0.5]]}, ValueError,
                 r"draft_probs\[1\] has 2 entries but target_probs\[1\] has 3", id="draft-narrower-than-target"),
    pytest.param({"draft_probs": [[0.1, 0.2, 0.6, 0.1], Q[1]]}, ValueError,
                 r"draft_probs\[0\] has 4 entries but target_probs\[0\] has 3", id="draft-wider-than-target"),
    pytest.param({"target_probs": [[], P[1], P[2]]}, ValueError, r"target_probs\[0\] is empty",
                 id="empty-target-row"),
    pytest.param({"draft_probs": [Q[0], []]}, ValueError, r"draft_probs\[1\] is empty", id="empty-draft-row"),
    pytest.param({"draft_tokens": [], "draft_probs": [], "target_probs": [[]], "random_samples": []},
                 ValueError, r"target_probs\[0\] is empty", id="k0-empty-bonus-row"),
    # --- token ids ---
    pytest.param({"draft_tokens": [2.0, 1]}, TypeError, r"draft_tokens\[0\] must be an integer", id="token-float"),
    pytest.param({"draft_tokens": [2, np.float64(1.0)]}, TypeError, r"draft_tokens\[1\]", id="token-numpy-float"),
    pytest.param({"draft_tokens": [2, "1"]}, TypeError, r"draft_tokens\[1\] must be an integer", id="token-str"),
    pytest.param({"draft_tokens": [True, 1]}, TypeError, r"draft_tokens\[0\] is True.*not a bool", id="token-bool"),
    pytest.param({"draft_tokens": [2, np.True_]}, TypeError, r"draft_tokens\[1\]", id="token-numpy-bool"),
    pytest.param({"draft_tokens": [2, None]}, TypeError, r"draft_tokens\[1\]", id="token-None"),
    pytest.param({"draft_tokens": [2, -1]}, ValueError, r"draft_tokens\[1\] is -1, outside the vocabulary \[0, 3\)",
                 id="token-negative"),
    pytest.param({"draft_tokens": [3, 1]}, ValueError, r"draft_tokens\[0\] is 3, outside the vocabulary \[0, 3\)",
                 id="token-equals-V"),
    pytest.param({"draft_tokens": [2, np.int64(10)]}, ValueError, r"draft_tokens\[1\] is 10", id="token-large-np"),
    # --- probability values ---
    pytest.param({"draft_probs": [Q[0], [1.1, -0.1, 0.0]]}, ValueError,
                 r"draft_probs\[1\]\[1\] is -0.1, a negative probability", id="draft-negative"),  # row sums to 1
    pytest.param({"target_probs": [P[0], P[1], [0.6, 0.6, -0.2]]}, ValueError,
                 r"target_probs\[2\]\[2\] is -0.2", id="target-negative-bonus-row"),
    pytest.param({"draft_probs": [Q[0], [math.nan, 0.5, 0.5]]}, ValueError,
                 r"draft_probs\[1\]\[0\] is nan: probabilities must be finite", id="draft-nan"),
    pytest.param({"target_probs": [P[0], [0.1, math.inf, 0.2], P[2]]}, ValueError,
                 r"target_probs\[1\]\[1\] is inf", id="target-inf"),
    pytest.param({"draft_probs": [Q[0], [0.5, -math.inf, 0.5]]}, ValueError,
                 r"draft_probs\[1\]\[1\] is -inf", id="draft-minus-inf"),
    pytest.param({"draft_probs": [[0.1, "0.2", 0.7], Q[1]]}, TypeError,
                 r"draft_probs\[0\]\[1\] must be a real number", id="draft-str-entry"),
    pytest.param({"target_probs": [P[0], [True, False, False], P[2]]}, TypeError,
                 r"target_probs\[1\]\[0\] must be a real number", id="target-bool-entry"),
    # logits passed by mistake: positive scores (so no negative entry trips first) summing to 3.5
    pytest.param({"target_probs": [[2.0, 1.0, 0.5], P[1], P[2]]}, ValueError,
                 r"target_probs\[0\] sums to 3\.5, not 1", id="target-logits"),
    pytest.param({"draft_probs": [Q[0], [3.0, 2.5, 0.1]]}, ValueError,
                 r"draft_probs\[1\] sums to 5\.6, not 1", id="draft-logits"),
    # unnormalised weights (counts) instead of probabilities
    pytest.param({"draft_probs": [[1, 2, 7], Q[1]]}, ValueError, r"draft_probs\[0\] sums to 10, not 1",
                 id="draft-unnormalised-weights"),
    # a row off by more than the 1e-4 tolerance
    pytest.param({"target_probs": [P[0], [0.1, 0.7, 0.2002], P[2]]}, ValueError,
                 r"target_probs\[1\] sums to 1\.0002", id="target-sum-off-by-2e-4"),
    # --- random samples ---
    pytest.param({"random_samples": [0.5, -0.1]}, ValueError, r"random_samples\[1\] is -0.1, outside \[0, 1\]",
                 id="u-negative"),
    pytest.param({"random_samples": [1.5, 0.4]}, ValueError, r"random_samples\[0\] is 1.5, outside \[0, 1\]",
                 id="u-above-1"),
    pytest.param({"random_samples": [0.5, math.nan]}, ValueError, r"random_samples\[1\] is nan", id="u-nan"),
    pytest.param({"random_samples": [math.inf, 0.4]}, ValueError, r"random_samples\[0\] is inf", id="u-inf"),
    pytest.param({"random_samples": [0.5, "0.4"]}, TypeError, r"random_samples\[1\] must be a real number",
                 id="u-str"),
    pytest.param({"random_samples": [True, 0.4]}, TypeError, r"random_samples\[0\] must be a real number",
                 id="u-bool"),
    # --- a non-sequence argument ---
    pytest.param({"draft_tokens": 2}, TypeError, r"draft_tokens must be a sequence", id="draft_tokens-int"),
    pytest.param({"draft_tokens": "21"}, TypeError, r"draft_tokens must be a sequence", id="draft_tokens-str"),
    pytest.param({"draft_probs": None}, TypeError, r"draft_probs must be a sequence", id="draft_probs-None"),
    pytest.param({"target_probs": (row for row in P)}, TypeError, r"target_probs must be a sequence",
                 id="target_probs-generator"),
    pytest.param({"random_samples": 0.5}, TypeError, r"random_samples must be a sequence",
                 id="random_samples-float"),
    # iterable but not a sequence: a set has no order, a dict would be read as its keys,
    # a 0-d array has len() but no entries
    pytest.param({"draft_tokens": {2, 1}}, TypeError, r"draft_tokens must be a sequence", id="draft_tokens-set"),
    pytest.param({"random_samples": {0: 0.5, 1: 0.4}}, TypeError, r"random_samples must be a sequence",
                 id="random_samples-dict"),
    pytest.param({"random_samples": np.array(0.5)}, TypeError, r"random_samples must be a sequence",
                 id="random_samples-0d-array"),
    pytest.param({"draft_probs": [Q[0], 0.7]}, TypeError, r"draft_probs\[1\] must be a sequence",
                 id="draft-row-not-sequence"),
    pytest.param({"target_probs": [P[0], "abc", P[2]]}, TypeError, r"target_probs\[1\] must be a sequence",
                 id="target-row-str"),
    # --- a drafted token the draft gives probability 0 (ratio p/q undefined) ---
    pytest.param({"draft_probs": [Q[0], [0.5, 0.0, 0.5]]}, ValueError,
                 r"draft_probs\[1\]\[1\] is 0 but draft_tokens\[1\] is 1", id="drafted-token-q-zero"),
]


@pytest.mark.parametrize("changes, error, message", CASES)
def test_bad_input_raises_naming_argument_and_position(changes, error, message):
    with pytest.raises(error, match=message):
        call(**changes)


def test_q_zero_raises_even_when_an_earlier_step_rejects():
    """Validation covers every row before verifying (so a bad input is never silently
    accepted just because an earlier step happened to reject). Step 0 would reject
    (p(0) = 0, u = 0.5), yet step 1's q(x) = 0 still raises."""
    with pytest.raises(ValueError, match=r"draft_probs\[1\]\[0\] is 0 but draft_tokens\[1\] is 0"):
        verify_speculative_tokens([0, 0], [[0.5, 0.5], [0.0, 1.0]], [[0.0, 1.0], [0.5, 0.5]], [0.5, 0.5])


def test_bad_unused_extra_target_row_raises():
    """Rows past K + 1 are never used but are validated: K=1, row 3 is logits."""
    with pytest.raises(ValueError, match=r"target_probs\[3\] sums to 3, not 1"):
        verify_speculative_tokens([0], [[0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5], [2.0, 1.0]], [0.1])


def test_numpy_row_with_nan_names_position():
    """The same message for NumPy input: a float32 NaN at draft_probs[0][2]."""
    q = np.array([[0.1, 0.2, np.nan], [0.2, 0.6, 0.2]], dtype=np.float32)
    with pytest.raises(ValueError, match=r"draft_probs\[0\]\[2\] is nan"):
        call(draft_probs=q)


def test_numpy_logits_row_names_position():
    """A NumPy row of raw logits (after a bad exp-free pipeline) sums to far more than 1."""
    p = np.array([[0.05, 0.15, 0.8], [4.0, 1.0, 0.5], [0.5, 0.3, 0.2]])
    with pytest.raises(ValueError, match=r"target_probs\[1\] sums to 5\.5, not 1"):
        call(target_probs=p)


@pytest.mark.parametrize("u", [0.0, 1.0, np.float32(1.0), 1], ids=["zero", "one", "float32-one", "int-one"])
def test_boundary_samples_are_valid(u):
    """u in [0, 1] inclusive (the graded problem says [0, 1); u = 1.0 is allowed rather than rejected).
    Example 1 has ratios >= 1 at both steps, so any valid u gives its answer."""
    assert call(random_samples=[u, u]) == EXAMPLE_1_ANSWER


@pytest.mark.parametrize("delta", [-9e-5, 9e-5], ids=["sum-below-1", "sum-above-1"])
def test_row_sum_within_tolerance_passes(delta):
    """A row off by 9e-5 (less than the 1e-4 tolerance) is accepted: p == q gives ratio 1,
    accepted, and the bonus row [0.2, 0.8] gives 1."""
    row = [0.5, 0.5 + delta]
    out = verify_speculative_tokens([0], [row], [row, [0.2, 0.8]], [1.0])
    assert out == {"accepted_tokens": [0], "bonus_token": 1, "acceptance_count": 1}
