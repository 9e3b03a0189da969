"""The lossless sampler: speculative sampling as published (plain Python).

Same rule as the graded `verify.py`, with the two argmaxes replaced by draws
(Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2):

    accept x_i             if u_i < min(1, p_i(x_i) / q_i(x_i)),  u_i ~ U[0, 1)
    on the first rejection  sample the correction from normalize(max(0, p_i - q_i)); stop
    all K accepted          sample the bonus token from p_K (None if target_probs has no row K)

When each x_i was drawn from q_i, every token this emits is distributed exactly
as the target p would have produced it (`theory.exact_output_distribution`
proves it for one token by enumeration, `exact.emitted_distribution` for whole
texts). Validation and the returned keys are those of `verify_speculative_tokens`;
the correction or bonus is in 'bonus_token'. The loop is `rules.token_rule`;
`block.block_verify` is its sibling that judges the drafted block as a whole.

    >>> speculative_sample([0], [[0.5, 0.5]], [[0.5, 0.5], [0.0, 1.0]], rng=0)
    {'accepted_tokens': [0], 'bonus_token': 1, 'acceptance_count': 1}
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Sequence

from ._checks import check_draft
from .rules import token_rule


def make_rng(rng: random.Random | int | None) -> random.Random:
    """A `random.Random` from a Random (used as is), an int seed, or None (fresh entropy)."""
    if isinstance(rng, random.Random):
        return rng
    if rng is None:
        return random.Random()
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):  # NumPy integer seeds too
        return random.Random(int(rng))
    raise TypeError(f"rng must be a random.Random, an int seed or None, got {type(rng).__name__}")


def speculative_sample(draft_tokens: Sequence[int], draft_probs: Sequence[Sequence[float]],
                       target_probs: Sequence[Sequence[float]], rng: random.Random | int | None = None) -> dict:
    """Verify a draft by speculative sampling; return the graded function's dict.

    rng: a `random.Random`, an int seed, or None. The same seed gives the same output.
    u_i are drawn only for the steps actually verified (none after a rejection).
    """
    tokens, q, p = check_draft(draft_tokens, draft_probs, target_probs)
    n, bonus = token_rule(tokens, q, p, make_rng(rng))   # the loop: rules.token_rule
    return {"accepted_tokens": tokens[:n], "bonus_token": bonus, "acceptance_count": n}
