"""Greedy and typical acceptance: the two rules that read only the target's rows (plain Python).

Neither needs the draft's probabilities or a uniform: given the draft, the result
is fixed. Same validation and dict as `verify_speculative_tokens`, minus the
draft rows and the samples; the loops are `rules.greedy_rule` and `rules.typical_rule`.

- greedy_verify: keep x_i while x_i = argmax p_i (ties: the lower id); then emit
  argmax p at the first mismatch, or argmax p_K after all K. Speculative decoding
  with it IS greedy decoding of the target, whatever the draft proposes.
- typical_verify (Medusa, Cai et al. 2024): keep x_i while

      p_i(x_i) > min(eps, delta exp(-H(p_i))),   H(p) = -sum p log p (nats),

  defaults eps = 0.09, delta = 0.3; then the same greedy token. A peaked row asks
  for p(x) > eps; a flat one for less (uniform over 10 ids: 0.3 * 0.1 = 0.03).
  NOT lossless. Worked example: p = [1/20, 19/20] at every position, draft
  q = [1/2, 1/2], K = 1. H(p) = 0.199 nats, so the bar is min(0.09, 0.3 * 0.820) =
  0.09: a drafted 0 (p = 0.05) fails and the greedy correction is 1; a drafted 1
  passes. The first token is always 1, where the target says 0 one time in 20:
  TV = 1/20 (`exact.emitted_distribution(..., "typical")` computes such TVs exactly).

    >>> typical_verify([0], [[0.05, 0.95]])      # 0.05 < 0.09: rejected, the greedy correction is 1
    {'accepted_tokens': [], 'bonus_token': 1, 'acceptance_count': 0}
    >>> typical_verify([1], [[0.05, 0.95], [0.5, 0.5]])   # 0.95 passes; the bonus is argmax p_1 (tie: 0)
    {'accepted_tokens': [1], 'bonus_token': 0, 'acceptance_count': 1}
    >>> greedy_verify([1, 0], [[0.05, 0.95], [0.3, 0.7], [1.0, 0.0]])   # argmax p_1 is 1, not 0
    {'accepted_tokens': [1], 'bonus_token': 1, 'acceptance_count': 1}
"""

from __future__ import annotations

from collections.abc import Sequence

from ._checks import check_nonnegative, check_scored
from .residual import argmax
from .rules import TYPICAL_DELTA, TYPICAL_EPS, greedy_rule, typical_rule


def greedy_verify(draft_tokens: Sequence[int], target_probs: Sequence[Sequence[float]]) -> dict:
    """Greedy verification of a draft of K tokens against K or K + 1 target rows; the graded function's dict."""
    tokens, p = check_scored(draft_tokens, target_probs)
    n, bonus = greedy_rule(tokens, [argmax(row) for row in p])
    return {"accepted_tokens": tokens[:n], "bonus_token": bonus, "acceptance_count": n}


def typical_verify(draft_tokens: Sequence[int], target_probs: Sequence[Sequence[float]], eps: float = TYPICAL_EPS,
                   delta: float = TYPICAL_DELTA) -> dict:
    """Typical acceptance of a draft of K tokens against K or K + 1 target rows; the graded function's dict."""
    eps, delta = check_nonnegative(eps, "eps"), check_nonnegative(delta, "delta")
    tokens, p = check_scored(draft_tokens, target_probs)
    n, bonus = typical_rule(tokens, p, eps, delta)
    return {"accepted_tokens": tokens[:n], "bonus_token": bonus, "acceptance_count": n}
