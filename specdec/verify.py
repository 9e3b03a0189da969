"""The graded rule: verify K drafted tokens against the target (plain Python).

This is `verify_speculative_tokens` from the graded problem, exactly as posed.
Notation (Leviathan et al. 2023), used everywhere in the kit: target p, draft q,
K drafted tokens (gamma in the papers), uniform samples u.

For each step i with drafted token x = draft_tokens[i]:
    accept x       if u_i <= min(1, p_i(x) / q_i(x))
    otherwise      bonus_token = argmax normalize(max(0, p_i - q_i)); stop.
If all K are accepted and target_probs has a row K: bonus_token = argmax p_K.

This module validates the input and builds the dict; the rule above, as code, is
`rules.graded_rule`, written beside the other verification rules (`rules.py`):

    for i, x in enumerate(tokens):
        if not graded_accepts(u[i], p[i][x], q[i][x]):                # u_i <= min(1, p_i(x) / q_i(x))
            return i, argmax(residual_distribution(p[i], q[i]))     # first rejection: correct and stop
    return K, (argmax(p[K]) if len(p) > K else None)                # all K kept

    >>> verify_speculative_tokens([2, 1], [[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]],
    ...     [[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], [0.5, 0.4])
    {'accepted_tokens': [2, 1], 'bonus_token': 0, 'acceptance_count': 2}

Subtle: taking the argmax instead of *sampling* makes this graded variant
deterministic, and it is therefore NOT lossless. `sampling.speculative_sample`
is the real algorithm, whose output is distributed exactly as p.

Conventions for what the graded problem leaves open (each one is tested):
- Lengths: len(draft_probs) == len(random_samples) == K and len(target_probs) >= K,
  else ValueError (the graded problem demands it).
- K = 0: nothing to verify; bonus_token = argmax target_probs[0] if that row exists, else None.
- Rows past K + 1 in target_probs are validated but never used.
- A drafted token with q(x) = 0 raises ValueError: a draft model cannot propose it
  (and p(x)/q(x) would divide by zero).
- p(x) = 0 gives ratio 0: rejected unless u == 0 (u <= 0 holds; u is in [0, 1]).
- A residual with no mass falls back to p (see `residual.py`).
- Argmax ties: the higher probability wins, then the lower token index.
- Rows must be distributions over one vocabulary: finite, non-negative, summing
  to 1 within 1e-4 (float32 rounding passes, logits do not). Token ids are
  integers (NumPy integers too, bool not) in [0, V). Samples are in [0, 1].
- Inputs are never mutated; outputs are plain Python ints, also for NumPy inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._checks import check_draft, check_samples
from .rules import graded_rule


def verify_speculative_tokens(draft_tokens: Sequence[int], draft_probs: Sequence[Sequence[float]],
                              target_probs: Sequence[Sequence[float]], random_samples: Sequence[float]) -> dict:
    """Verify draft tokens via speculative decoding rejection sampling.

    Args:
        draft_tokens: Sequence of K tokens proposed by draft model.
        draft_probs: Draft model probabilities for each proposed step (q, K rows).
        target_probs: Target model probabilities for each step (p, length >= K).
        random_samples: K uniform random samples for the acceptance test, each in [0, 1] (the check
            accepts 1.0 too; a value outside [0, 1] is a ValueError).
    Returns:
        dict with 'accepted_tokens', 'bonus_token', and 'acceptance_count'.

    >>> verify_speculative_tokens([0], [[0.8, 0.2]], [[0.2, 0.8]], [0.5])  # 0.5 > 0.2/0.8
    {'accepted_tokens': [], 'bonus_token': 1, 'acceptance_count': 0}
    """
    tokens, q, p = check_draft(draft_tokens, draft_probs, target_probs)
    u = check_samples(random_samples, len(tokens))
    # The loop is rules.graded_rule, beside its siblings (token, block, greedy, typical).
    n, bonus = graded_rule(tokens, q, p, u)
    return {"accepted_tokens": tokens[:n], "bonus_token": bonus, "acceptance_count": n}
