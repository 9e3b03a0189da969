"""Exercise 4: the lossless speculative sampler (Leviathan et al. 2023, Algorithm 1).

The graded rule of exercise 1 takes two argmaxes, which makes it deterministic and NOT lossless. Here
they become draws. For each drafted x = draft_tokens[i], with target row p = target_probs[i] and draft
row q = draft_probs[i]: draw u = rng.random() and accept x if u < min(1, p(x) / q(x)). At the first
rejection, SAMPLE the replacement from normalize(max(0, p - q)) (or from p if that has no mass) and
stop. If all K are accepted, SAMPLE the bonus token from target_probs[K] when that row exists (else
None). When each x was drawn from q, every emitted token is then distributed exactly as p.

Warning: draw a FRESH u = rng.random() for the replacement. The u the test rejected is at least
min(1, p(x) / q(x)), so reusing it never reaches the start of the residual's running sum: the sampler
is then biased, and the grader names that mistake.

    >>> speculative_sample([0], [[1.0, 0.0]], [[0.0, 1.0]], random.Random(0))  # p(0) = 0: always rejected
    {'accepted_tokens': [], 'bonus_token': 1, 'acceptance_count': 0}
"""

import random  # the stub needs it too: the signature names random.Random


def speculative_sample(draft_tokens: list[int], draft_probs: list[list[float]],
                       target_probs: list[list[float]], rng: random.Random) -> dict:
    """Verify draft tokens by speculative sampling: accept or resample, keeping the target distribution.
    Args:
        draft_tokens: Sequence of K tokens proposed by draft model (each drawn from its draft row).
        draft_probs: Draft model probabilities for each proposed step (K rows).
        target_probs: Target model probabilities for each step (length >= K; row K, if present, gives the bonus).
        rng: A random.Random; call rng.random() for every uniform you need.
    Returns:
        dict with 'accepted_tokens', 'bonus_token' (the resampled or bonus token, or None),
        and 'acceptance_count'.

    >>> speculative_sample([0], [[0.5, 0.5]], [[0.5, 0.5], [0.0, 1.0]], random.Random(0))  # p == q: accepted
    {'accepted_tokens': [0], 'bonus_token': 1, 'acceptance_count': 1}
    """
    raise NotImplementedError("write speculative_sample")
