"""Exercise 6: block verification (Sun, Mendlovic, Leviathan et al. 2024, arXiv 2403.10444, Algorithm 2).

The token rule of exercise 4 stops at the first rejected draft. Block verification judges the drafted
block as a whole and keeps the LONGEST prefix whose own test passes, still without changing the
target's distribution. Drafted tokens x_1..x_K are draft_tokens[0..K-1]; the rows p_i = target_probs[i]
and q_i = draft_probs[i] score x_{i+1}. Draw eta_1..eta_K = K calls of rng.random(), in order. Then:

    w_0 = 1,  w_i = min(1, w_{i-1} * p_{i-1}(x_i) / q_{i-1}(x_i))              the weights
    Z_i = sum_y max(0, w_i * p_i(y) - q_i(y))                                  for i < K
    h_i = Z_i / (Z_i + 1 - w_i) for i < K (1 when w_i = 1),  h_K = w_K         the thresholds
    n   = the largest i in 1..K with eta_i < h_i, or 0 if there is none       the tokens kept

If n = K, SAMPLE the bonus token from target_probs[K] when that row exists (else None); otherwise
SAMPLE the next token from normalize(max(0, w_n * p_n - q_n)), or from p_n if that has no mass.

    >>> block_verify([0, 1], [[2/3, 1/3]] * 2, [[1/3, 2/3], [1/3, 2/3], [0.0, 1.0]], random.Random(0))
    {'accepted_tokens': [0, 1], 'bonus_token': 1, 'acceptance_count': 2}
"""

import random  # the stub needs it too: the signature names random.Random


def block_verify(draft_tokens: list[int], draft_probs: list[list[float]],
                 target_probs: list[list[float]], rng: random.Random) -> dict:
    """Verify a drafted block jointly; return exercise 4's dict, with the same target distribution.
    Args:
        draft_tokens: Sequence of K tokens proposed by draft model (each drawn from its draft row).
        draft_probs: Draft model probabilities for each proposed step (K rows).
        target_probs: Target model probabilities for each step (length >= K; row K, if present, gives the bonus).
        rng: A random.Random; draw eta_1..eta_K with rng.random() first, then sample the next token.
    Returns:
        dict with 'accepted_tokens', 'bonus_token' (the sampled next token, or None),
        and 'acceptance_count'.

    >>> block_verify([1], [[0.5, 0.5]], [[1.0, 0.0], [0.5, 0.5]], random.Random(0))  # p(1) = 0: never kept
    {'accepted_tokens': [], 'bonus_token': 0, 'acceptance_count': 0}
    """
    raise NotImplementedError("write block_verify")
