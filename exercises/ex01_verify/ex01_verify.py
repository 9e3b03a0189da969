"""Exercise 1: verify a speculative draft (the graded problem).

A draft model proposed K tokens; the target model scored the same positions. Walk the draft left to
right with target row p = target_probs[i] and draft row q = draft_probs[i]: accept x = draft_tokens[i]
when random_samples[i] <= min(1, p(x) / q(x)). At the first rejection the bonus token is the argmax of
normalize(max(0, p - q)) and verification stops. If all K are accepted and target_probs has a row K, the
bonus token is argmax target_probs[K]; otherwise it is None. Argmax ties go to the lower token index.
A residual with no mass falls back to p. Mismatched lengths and a drafted token with q(x) = 0 raise
ValueError, and so does a row that is not a distribution, its message naming the row (target_probs[1]).

    >>> verify_speculative_tokens([0], [[0.8, 0.2]], [[0.2, 0.8]], [0.5])  # 0.5 > 0.2 / 0.8: rejected
    {'accepted_tokens': [], 'bonus_token': 1, 'acceptance_count': 0}
"""


def verify_speculative_tokens(draft_tokens: list[int], draft_probs: list[list[float]],
                              target_probs: list[list[float]], random_samples: list[float]) -> dict:
    """Verify draft tokens via speculative decoding rejection sampling.
    Args:
        draft_tokens: Sequence of K tokens proposed by draft model.
        draft_probs: Draft model probabilities for each proposed step.
        target_probs: Target model probabilities for each step (length >= K).
        random_samples: Uniform random samples in [0, 1) for acceptance test.
    Returns:
        dict with 'accepted_tokens', 'bonus_token', and 'acceptance_count'.
    """
    raise NotImplementedError("write verify_speculative_tokens")
