"""Block verification: judge the drafted block as a whole, keep more, stay lossless (plain Python).

Sun, Mendlovic, Leviathan et al. 2024, "Block Verification Accelerates Speculative
Decoding" (arXiv 2403.10444), Algorithm 2. Same inputs, validation and dict as
`sampling.speculative_sample` (the token rule); the loop is `rules.block_rule`.
Drafted tokens x_1..x_K (draft_tokens[0..K-1]); p_i, q_i are the rows that score
x_{i+1} (target_probs[i], draft_probs[i]); r_i = p_{i-1}(x_i) / q_{i-1}(x_i).

    weights     w_0 = 1,  w_i = min(1, w_{i-1} r_i)
    mass        Z_i = sum_y max(0, w_i p_i(y) - q_i(y))                  (i < K)
    thresholds  h_i = Z_i / (Z_i + 1 - w_i)  (1 when w_i = 1),  h_K = w_K
    keep        n = the LAST i in 1..K with eta_i < h_i (eta_i ~ U[0, 1) independent), 0 if none
    emit        y ~ p_K if n = K, else y ~ normalize(max(0, w_n p_n - q_n))

Why it beats the token rule. Vocabulary {a, b}, rows that ignore the context,
p = [1/3, 2/3], q = [2/3, 1/3], K = 2. Draft "a b" (probability 2/9): the token
rule keeps "a" with probability min(1, 1/2) = 1/2, so "a b" survives half the time.
But p(ab) = 2/9 = q(ab): the pair could be kept every time. Block verification
sees it: w_1 = 1/2, w_2 = min(1, 1/2 * 2) = 1 = h_2, so n = 2 for every eta.
On average the token rule keeps beta + beta^2 = 2/3 + 4/9 = 10/9 tokens; block
verification keeps E[w_1] + E[w_2] = 2/3 + 5/9 = 11/9 (step 4 below):

    >>> from fractions import Fraction as F
    >>> from specdec.exact import expected_accepted
    >>> p, q = (lambda s: (F(1, 3), F(2, 3))), (lambda s: (F(2, 3), F(1, 3)))
    >>> expected_accepted(p, q, 2, "token"), expected_accepted(p, q, 2, "block")
    (Fraction(10, 9), Fraction(11, 9))
    >>> block_verify([0, 1], [[2/3, 1/3]] * 2, [[1/3, 2/3], [1/3, 2/3], [0.0, 1.0]], rng=0)
    {'accepted_tokens': [0, 1], 'bonus_token': 1, 'acceptance_count': 2}

Why it is lossless (Sun et al.'s Theorem 1; this derivation is ours, and
`exact.emitted_distribution` checks it exactly). Write s = x_1..x_i, q(s), p(s)
for its probability under each model, and let every x_i be drawn from q_{i-1}.

1. w_i(s) is the share of s that may be kept: unrolled, w_i = min over j of the
   ratio p/q of the last i - j tokens, so q(s) w_i(s) <= p(s).
2. The thresholds make, averaged over the draft after s,

       P(n >= i | s) = w_i(s).                                               (*)

   Since n is the LAST pass, n >= i iff some j >= i passes: 1 - prod_{j>=i} (1 - h_j).
   At i = K that is h_K = w_K. Below, h_i is fixed by s and, by (*) at i + 1,
   the later part fails with probability 1 - E[w_{i+1} | s] = 1 - w_i + Z_i,
   because E[w_{i+1} | s] = sum_y min(q_i(y), w_i p_i(y)) = w_i - Z_i. So

       P(n >= i | s) = 1 - (1 - h_i)(1 - w_i + Z_i) = w_i  iff  h_i = Z_i / (Z_i + 1 - w_i),

   and P(n = i | s) = w_i - (w_i - Z_i) = Z_i: the block stops after s exactly
   as often as the weighted residual has mass to hand out.
3. The emitted text. Let D(s) = P(the text starts with s, yet the block ended
   inside s); the target writes what follows. The text starts with s y if the
   block kept s then y (probability q(s) min(q_i(y), w_i p_i(y))), or kept s and
   drew y from the residual (q(s) max(0, w_i p_i(y) - q_i(y))), or ended earlier
   (D(s) p_i(y)). The first two add up to q(s) w_i p_i(y). And D(s) = p(s) - q(s) w_i(s):
   D(empty) = 1 - 1, and D(s y) = D(s) p_i(y) + q(s) max(0, w_i p_i(y) - q_i(y))
   = p(s y) - q(s) min(w_i p_i(y), q_i(y)) = p(s y) - q(s y) w_{i+1}. So the text starts
   with s y with probability q(s) w_i p_i(y) + D(s) p_i(y) = p(s) p_i(y) = p(s y).
   At i = K all K are kept with probability q(s) w_K and y ~ p_K: the same sum.
4. Never fewer tokens (Sun et al.'s Theorem 2): w_i = min(1, w_{i-1} r_i) >= w_{i-1} min(1, r_i),
   so w_i >= prod_j min(1, r_j), the chance that the token rule keeps s. Summing (*)
   over i, E[n] = sum_i E[w_i] >= the token rule's E[n]. At K = 1 the two rules are
   the same (h_1 = w_1 = min(1, r_1), residual max(0, p_0 - q_0)), and at temperature 0
   (one-hot rows) every w_i is 0 or 1, so both keep drafts up to the first mismatch.

Why the LAST pass, not the first failure: a later token whose ratio exceeds 1 can
lift w back up (w_2 = 1 above) and so rescue a prefix that failed its own test.
Implementations that keep the last pass but test each token alone, eta_i < min(1, r_i),
with the per-token residual (vllm-ascend#7807) are not lossless: `theory` measures it.

Drafters without probabilities (n-gram, suffix): vllm-ascend#7603 disabled block
verification for them, whose missing q it filled with 1.0 for the drafted token. Used
consistently, as a one-hot row on the drafted token (in the weights, the residual masses
and the residual alike), that is lossless for both rules: each fixed draft is a valid
deterministic draft. A row of ones for EVERY token is not. Both are measured exactly by
`exact.step_outcomes(..., reported="one-hot" or "ones")`.

Edges (each tested):
- 0/0 in h_i (Z_i = 0 and w_i = 1): h_i = 1. In (*) any h_i works there (1 - w_i + Z_i = 0);
  1 keeps the prefix and never asks an empty residual for a token.
- A residual with no mass at n: in exact arithmetic unreachable (P(n = i | s) = Z_i);
  after float rounding, fall back to p_n, as `residual.py` does.
- p_{i-1}(x_i) = 0: w_i = 0, and every later weight too: nothing from x_i on is kept.
- q(x) = 0 for a drafted token, K = 0, rows past K + 1, bad rows: as `speculative_sample`
  (ValueError; y ~ target_probs[0] if present, else None; validated, unused; ValueError).
- Uniforms: eta_1..eta_K first, in order, then one for y; at K = 1 this is
  `speculative_sample` with the same seed, draw for draw.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from ._checks import check_draft
from .rules import block_rule
from .sampling import make_rng


def block_verify(draft_tokens: Sequence[int], draft_probs: Sequence[Sequence[float]],
                 target_probs: Sequence[Sequence[float]], rng: random.Random | int | None = None) -> dict:
    """Verify a drafted block jointly (Sun et al. 2024); return `speculative_sample`'s dict.

    rng: a `random.Random`, an int seed, or None. The same seed gives the same output.
    When each draft_tokens[i] was drawn from draft_probs[i], the emitted tokens are
    distributed exactly as the target's own (see the module docstring).

    >>> block_verify([1], [[0.5, 0.5]], [[1.0, 0.0], [0.5, 0.5]], rng=0)  # p(1) = 0: rejected, y from [1, 0]
    {'accepted_tokens': [], 'bonus_token': 0, 'acceptance_count': 0}
    """
    tokens, q, p = check_draft(draft_tokens, draft_probs, target_probs)
    n, bonus = block_rule(tokens, q, p, make_rng(rng))
    return {"accepted_tokens": tokens[:n], "bonus_token": bonus, "acceptance_count": n}
