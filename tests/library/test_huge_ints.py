"""An int too large for a float (10 ** 400) is a ValueError naming the argument, at every public entry point.

Python ints have no size limit, and float(10 ** 400) raises OverflowError, which names nothing
(and a count that large would make some loops run forever). Each case below puts 10 ** 400
in ONE numeric argument of one entry point, everything else valid, and expects a ValueError
whose message starts with that argument's name (and position) and says "an int of 401 digits".
"""

import math
import random
import re

import numpy as np
import pytest

import specdec
from specdec import batched, multidraft, residual, theory
from specdec.generation import decode

BIG = 10 ** 400
Q, P = [[0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]


class Uniform:
    """The smallest Draft and Target: every row uniform over V = 4 ids (never reached by these cases)."""

    V = 4

    def propose(self, context, temperature, rng):
        return 0, np.full(4, 0.25)

    def argmax_next(self, context):
        return 0

    def next_token_probs(self, contexts, temperature):
        return np.full((len(contexts), 4), 0.25)

    def probs_for_positions(self, ids, start, temperature):
        return np.full((len(ids) - start + 1, 4), 0.25)

    def probs_for_tree(self, ids, parents, tokens, temperature):
        return np.full((len(tokens) + 1, 4), 0.25)


M = Uniform()
CASES = {  # name in the message: the call with 10 ** 400 in that argument
    # the graded rule, the samplers, the rules beside them (plain Python)
    "random_samples[0]": lambda: specdec.verify_speculative_tokens([0], Q, P, [BIG]),
    "draft_probs[0][1]": lambda: specdec.speculative_sample([0], [[0.5, BIG]], P, 0),
    "target_probs[1][0]": lambda: specdec.block_verify([0], Q, [[0.5, 0.5], [BIG, 0.5]], 0),
    "draft_tokens[0]": lambda: specdec.block_verify([BIG], Q, P, 0),
    "logits[1]": lambda: specdec.softmax([0.0, BIG]),
    "temperature": lambda: specdec.softmax([0.0, 1.0], BIG),
    "p[0]": lambda: specdec.residual_distribution([BIG, 0.5], [0.5, 0.5]),
    "q[1]": lambda: residual.residual_mass([0.5, 0.5], [0.5, BIG]),
    "weight": lambda: specdec.residual_distribution([0.5, 0.5], [0.5, 0.5], BIG),
    "row[1]": lambda: residual.sample_from([0.5, BIG], random.Random(0)),
    "candidates[0]": lambda: specdec.multi_draft_sample([BIG], Q, [0.5, 0.5], 0),
    "target_probs[1]": lambda: specdec.multi_draft_sample([0], Q, [0.5, BIG], 0),
    "parents[0]": lambda: specdec.verify_tree([0], [BIG], [[0.5, 0.5], None], P, 0),
    "tokens[0]": lambda: specdec.verify_tree([BIG], [-1], [[0.5, 0.5], None], P, 0),
    "q[0]": lambda: multidraft.draw_candidates([BIG, 0.5], 1, 0),
    "k": lambda: multidraft.draw_candidates([0.5, 0.5], BIG, 0, replace=True),
    "q[1] (without replacement)": lambda: multidraft.without_replacement_probs([0.5, BIG], [0, 1]),
    "target_probs[0][0]": lambda: specdec.greedy_verify([0], [[BIG, 0.5]]),
    "eps": lambda: specdec.typical_verify([0], P, eps=BIG),
    "delta": lambda: specdec.typical_verify([0], P, delta=BIG),
    # theory
    "alpha": lambda: theory.expected_tokens_per_step(BIG, 2),
    "gamma": lambda: theory.expected_tokens_per_step(0.9, BIG),          # once an endless sum
    "c": lambda: theory.walltime_speedup(0.5, 2, BIG),
    "gamma (walltime_speedup)": lambda: theory.walltime_speedup(0.5, BIG, 0.1),
    "alpha (optimal_draft_length)": lambda: theory.optimal_draft_length(BIG, 0.1),
    "c (optimal_draft_length)": lambda: theory.optimal_draft_length(0.5, BIG),
    "max_gamma": lambda: theory.optimal_draft_length(0.5, 0.1, BIG),
    "alpha (accepted_count_distribution)": lambda: theory.accepted_count_distribution(BIG, 2),
    "gamma (accepted_count_distribution)": lambda: theory.accepted_count_distribution(0.5, BIG),
    "p[1]": lambda: theory.exact_output_distribution([0.5, BIG], [0.5, 0.5]),
    "q[0] (acceptance_rate)": lambda: theory.acceptance_rate([0.5, 0.5], [BIG, 0.5]),
    # generation (NumPy)
    "max_new_tokens": lambda: decode.autoregressive_generate(M, [0], BIG),
    "temperature (autoregressive_generate)": lambda: decode.autoregressive_generate(M, [0], 1, temperature=BIG),
    "prompt_ids[1]": lambda: decode.speculative_generate(M, M, [0, BIG], 1, 2),
    "max_new_tokens (speculative_generate)": lambda: decode.speculative_generate(M, M, [0], BIG, 2),
    "gamma (speculative_generate)": lambda: decode.speculative_generate(M, M, [0], 1, BIG),
    "temperature (speculative_generate)": lambda: decode.speculative_generate(M, M, [0], 1, 2, temperature=BIG),
    "width": lambda: decode.speculative_generate(M, M, [0], 1, 2, 1.0, verify="tree", width=BIG),
    "eps (speculative_generate)": lambda: decode.speculative_generate(M, M, [0], 1, 2, 1.0, verify="typical", eps=BIG),
    "delta (speculative_generate)": lambda: decode.speculative_generate(M, M, [0], 1, 2, 1.0, verify="typical",
                                                                        delta=BIG),
    # batches (NumPy)
    "random_samples[0, 0]": lambda: batched.verify_batch([[0]], [Q], [P], [[BIG]]),
    "draft_probs[0, 0, 1]": lambda: batched.verify_batch([[0]], [[[0.5, BIG]]], [P], [[0.5]]),
    "target_probs[0, 1, 0]": lambda: batched.sample_batch([[0]], [Q], [[[0.5, 0.5], [BIG, 0.5]]], 0),
    "draft_tokens[0, 0]": lambda: batched.sample_batch([[BIG]], [Q], [P], 0),
    "temperature (verify_batch)": lambda: batched.verify_batch([[0]], [Q], [P], [[0.5]], from_logits=True,
                                                               temperature=BIG),
    "temperature[0]": lambda: batched.sample_batch([[0]], [Q], [P], 0, from_logits=True, temperature=[BIG]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_huge_int_is_a_value_error_naming_the_argument(name):
    argument = name.split(" (")[0]
    with pytest.raises(ValueError) as raised:
        CASES[name]()
    assert re.match(rf"{re.escape(argument)} is an int of 401 digits\b", str(raised.value)), str(raised.value)


def test_big_but_finite_numbers_still_work():
    assert theory.walltime_speedup(0.5, 2, 10 ** 300) < 1e-299                  # a huge cost ratio: no speedup
    assert specdec.residual_distribution([0.5, 0.5], [0.5, 0.5], 10 ** 300) == [0.5, 0.5]
    assert theory.expected_tokens_per_step(0.5, theory.MAX_GAMMA) == 2.0          # the sum 1 + 1/2 + ... to 10^4 terms
    with pytest.raises(ValueError, match=r"gamma is 10001; it must be in \[0, 10000\]"):
        theory.expected_tokens_per_step(0.5, theory.MAX_GAMMA + 1)


def test_library_turns_overflow_into_a_clean_value_error():
    with pytest.raises(ValueError, match=r"logits\[1\] is an int of 401 digits"):
        specdec.softmax([0.0, 10 ** 400])
    with pytest.raises(ValueError, match=r"random_samples\[0\] is an int of 401 digits"):
        specdec.verify_speculative_tokens([0], [[0.5, 0.5]], [[0.5, 0.5]], [10 ** 400])
    with pytest.raises(ValueError, match=r"draft_probs\[0\]\[1\]"):
        specdec.verify_speculative_tokens([0], [[0.5, 10 ** 400]], [[0.5, 0.5]], [0.5])
    assert math.isclose(sum(specdec.softmax([10 ** 300, 10 ** 300 - 1])), 1.0)  # big but finite is fine
