"""The rule over a batch with NumPy: B drafts of K tokens verified at once, as a serving engine needs it.

`verify_batch` is the graded `verify_speculative_tokens` on every row (same rule, ties and
fallbacks, float32 or float64); `sample_batch` is the lossless `speculative_sample` on every
row. Notation as everywhere: target p, draft q, K drafted tokens (gamma in the papers).

    draft_tokens [B, K]   draft_probs q [B, K, V]   target_probs p [B, K or K + 1, V]
    random_samples u [B, K] -> {"acceptance_count": int64[B], "bonus_token": int64[B]}

bonus_token is -1 where there is none; row b accepted draft_tokens[b, :acceptance_count[b]].

    >>> import numpy as np
    >>> q = np.array([[[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]], [[0.8, 0.2, 0.0], [0.5, 0.5, 0.0]]])
    >>> p = np.array([[[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]],    # row 0: the graded problem's example 1
    ...               [[0.2, 0.8, 0.0], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]])    # row 1: 0.5 > 0.2 / 0.8
    >>> out = verify_batch(np.array([[2, 1], [0, 0]]), q, p, np.array([[0.5, 0.4], [0.5, 0.5]]))
    >>> out["acceptance_count"].tolist(), out["bonus_token"].tolist()
    ([2, 0], [0, 1])
    >>> with np.errstate(divide="ignore"):                  # log 0 = -inf: a logit of probability 0
    ...     z_q, z_p = np.log(q), np.log(p) + 3.0            # logits are defined up to a constant per row
    >>> out = verify_batch(np.array([[2, 1], [0, -1]]), z_q, z_p, np.array([[0.5, 0.4], [0.5, 0.5]]), from_logits=True)
    >>> out["acceptance_count"].tolist(), out["bonus_token"].tolist()   # row 1 has one draft: -1 is "none"
    ([2, 0], [0, 1])

Serving-engine inputs, each checked against the plain rule in tests/library/test_batched.py:
- from_logits=True: q and p are logits z and the rows are softmax(z / temperature); see
  `batched_logits` (one logsumexp pass per row, probabilities only where the rule looks).
  temperature: one number or one per row [B]; 0 is greedy decoding (accept while the draft
  is the target's argmax). Only -inf means probability 0: a finite logit is never rounded to it.
- Ragged drafts: draft_tokens[b, i] = -1 (vLLM's placeholder) means "no draft here" and may
  only fill the end of a row. Row b is then verified on its k_b real drafts, exactly as the
  plain rule on draft_tokens[b, :k_b] with target rows 0..k_b (row k_b is its bonus row if
  target_probs has K + 1 rows). Entries at placeholder positions are padding, never read or
  validated (zeros are fine), and so are a ragged row's target rows after its bonus row.
- Per-row seeds (sample_batch's rng = integers [B], or (seed, step) pairs [B, 2]): row b's
  draws come from its own counter-based stream (`batched_seeds`), so its result does not
  depend on the other rows of the batch. One Generator or int seed draws for the whole batch
  in batch order instead: fine for Monte Carlo, but a row's result changes with its batch.

Why it is cheap: only p(x) and q(x) at the drafted tokens decide acceptance, and only the
FIRST rejected position of a row needs a residual (verification stops there): O(B (K + V))
work beyond validation, where max(0, p - q) at all B x K positions (`batched_naive`, as vLLM
v0 does) costs O(B K V). Validation (validate=True, the default) still reads every real row
once, O(B K V); validate=False skips those row checks for trusted inputs (the benchmark
times both), and then bad rows give garbage. Token ids, uniforms, temperatures, seeds and
q(x) > 0 are O(B K) and always checked.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .checks import (as_array, check_logit_rows, check_prob_rows, check_seeds, check_temperature,
                              check_tokens, check_uniforms, first_bad)
from .rules import accept_graded, accept_sampled, draw_rows, residual_argmax, residual_weights
from .logits import chain_from_logits
from .seeds import row_uniforms


def _prepare(draft_tokens, draft_probs, target_probs, validate, from_logits):
    """Checked arrays: tokens [B, K], k_row [B], real [B, K] (not a placeholder), q [B, K, V], p [B, R, V],
    q(x) [B, K]."""
    kind = "logits" if from_logits else "probs"
    tokens = as_array(draft_tokens, "draft_tokens", 2, "[B, K]", integer=True)
    q = as_array(draft_probs, f"draft_{kind}", 3, "[B, K, V]")
    p = as_array(target_probs, f"target_{kind}", 3, "[B, K or K + 1, V]")
    (b, k), v = tokens.shape, q.shape[2]
    if q.shape[:2] != (b, k):
        raise ValueError(f"draft_{kind} has shape {q.shape} but draft_tokens has shape {tokens.shape}: "
                         f"expected [B, K, V] = [{b}, {k}, V], one draft row per drafted token")
    if p.shape[0] != b or p.shape[1] < k or p.shape[2] != v:
        raise ValueError(f"target_{kind} has shape {p.shape} but draft_{kind} has shape {q.shape}: expected "
                         f"[{b}, {k} or {k + 1}, {v}], the target scores every drafted position (+1 for the bonus)")
    if v == 0:
        raise ValueError(f"draft_{kind} has V = 0 entries per row: a distribution needs at least one token")
    k_row = check_tokens(tokens, v)                                          # [B]
    real = np.arange(k)[None, :] < k_row[:, None]                            # [B, K]
    if validate:
        has_bonus = p.shape[1] > k                                           # rows used: 0..k_b (+ all of a dense row)
        real_p = (np.arange(p.shape[1])[None, :] < (k_row + has_bonus)[:, None]) | (k_row == k)[:, None]
        check_rows = check_logit_rows if from_logits else check_prob_rows
        check_rows(p, f"target_{kind}", real_p)
        check_rows(q, f"draft_{kind}", real)
    safe = np.where(real, tokens, 0)                                         # placeholders read entry 0, unused
    qx = q[np.arange(b)[:, None], np.arange(k)[None, :], safe]               # [B, K]
    never = (qx == (-np.inf if from_logits else 0)) & real                   # the draft gives x probability 0
    if never.any():
        i, j = first_bad(never)
        zero = "-inf" if from_logits else 0
        raise ValueError(f"draft_{kind}[{i}, {j}, {tokens[i, j]}] is {zero} but draft_tokens[{i}, {j}] is "
                         f"{tokens[i, j]}: the draft cannot have proposed a token it gives probability 0")
    return tokens, k_row, real, q, p, qx


def _chain_from_probs(tokens, k_row, real, q, p, qx, u, accept, draw):
    """The rule on probability rows, all positions at once -> (acceptance_count [B], bonus_token [B])."""
    k = tokens.shape[1]
    px = np.take_along_axis(p[:, :k], np.where(real, tokens, 0)[..., None], axis=2)[..., 0]   # [B, K]
    with np.errstate(all="ignore"):                                          # p / tiny q is inf, as in Python
        reject = ~accept(u, px.astype(np.float64) / qx.astype(np.float64)) & real   # [B, K]
    rejected = reject.any(axis=1)                                            # [B]
    first = reject.argmax(axis=1) if k else 0                                # argmax of bools: the first True
    count = np.where(rejected, first, k_row).astype(np.int64)                # [B]
    bonus = np.full(len(count), -1, np.int64)
    rows = np.flatnonzero(rejected)                                          # [R]: one residual row each
    p_rows, q_rows = p[rows, count[rows]], q[rows, count[rows]]              # [R, V]
    if draw is None:
        bonus[rows] = residual_argmax(p_rows, q_rows)
    else:
        bonus[rows] = draw_rows(residual_weights(p_rows, q_rows, np.float64), draw(rows))
    if p.shape[1] > k:                                                       # the target scored the bonus rows
        done = np.flatnonzero(~rejected)
        p_rows = p[done, k_row[done]]                                        # [D, V]
        # Convention (verify.py, residual.py): np.argmax takes the first maximum, ties to the lower index.
        bonus[done] = p_rows.argmax(axis=1) if draw is None else draw_rows(p_rows.astype(np.float64), draw(done))
    return count, bonus


def _chain(draft_tokens, draft_probs, target_probs, uniforms, accept, validate, from_logits, temperature):
    """Check the inputs, take the uniforms (u [B, K], draw) from `uniforms`, run the probabilities' or logits' path."""
    tokens, k_row, real, q, p, qx = _prepare(draft_tokens, draft_probs, target_probs, validate, from_logits)
    if temperature is not None and not from_logits:
        raise ValueError("temperature applies to logits: pass from_logits=True (probabilities already have theirs)")
    t = check_temperature(1.0 if temperature is None else temperature, len(tokens))
    u, draw = uniforms(tokens.shape, real, k_row)
    if from_logits:
        count, bonus = chain_from_logits(tokens, k_row, q, p, t, u, accept, draw)
    else:
        count, bonus = _chain_from_probs(tokens, k_row, real, q, p, qx, u, accept, draw)
    return {"acceptance_count": count, "bonus_token": bonus}


def verify_batch(draft_tokens: npt.ArrayLike, draft_probs: npt.ArrayLike, target_probs: npt.ArrayLike,
                 random_samples: npt.ArrayLike, *, validate: bool = True, from_logits: bool = False,
                 temperature: float | npt.ArrayLike | None = None) -> dict[str, np.ndarray]:
    """The graded rule on every row: row b equals verify_speculative_tokens on row b.

    Accept while u <= min(1, p(x) / q(x)) (compared in float64, as the plain rule does);
    at the first rejection bonus = argmax of the residual (argmax p if it has no mass);
    if all K are accepted and target_probs has row K, bonus = argmax p_K; else -1.
    Rows of target_probs past K + 1 are validated but never used, as in the plain rule.
    from_logits, temperature, placeholders (-1) and validate: see the module docstring.
    """
    def uniforms(shape, real, k_row):
        return check_uniforms(random_samples, shape, real), None            # draw None: argmax, nothing sampled
    return _chain(draft_tokens, draft_probs, target_probs, uniforms, accept_graded, validate, from_logits,
                  temperature)


def sample_batch(draft_tokens: npt.ArrayLike, draft_probs: npt.ArrayLike, target_probs: npt.ArrayLike,
                 rng: np.random.Generator | int | npt.ArrayLike, *, validate: bool = True, from_logits: bool = False,
                 temperature: float | npt.ArrayLike | None = None) -> dict[str, np.ndarray]:
    """The lossless sampler on every row, returning verify_batch's dict.

    Accept while u < min(1, p(x) / q(x)) with u ~ U[0, 1) (strict <, as `sampling.py`);
    the correction is SAMPLED from the residual (p if it has no mass) and the bonus from
    p_K. When draft_tokens[b, i] ~ draft_probs[b, i], every emitted token is distributed as p.
    rng: a numpy.random.Generator or an int seed (one stream for the batch, drawn in batch
    order), or per-row seeds, integers [B] or (seed, step) pairs [B, 2] (row b's draws depend
    on its seed only). The same rng gives the same output.
    """
    def uniforms(shape, real, k_row):
        if isinstance(rng, np.random.Generator) or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
            gen = np.random.default_rng(rng)                                 # a Generator is returned as it is
            return gen.random(shape), lambda rows: gen.random(len(rows))
        if np.ndim(rng) == 0 or isinstance(rng, (str, bytes)):
            raise TypeError("rng must be a numpy.random.Generator, an int seed, or per-row seeds (integers [B] or "
                            f"(seed, step) pairs [B, 2]), got {type(rng).__name__}")
        draws = row_uniforms(check_seeds(rng, shape[0]), shape[1] + 1)      # [B, K + 1]
        # Row b uses slots 0..k_b - 1 to accept and slot k_b for its correction or bonus, so padding
        # a ragged row to a wider batch leaves its draws unchanged.
        return draws[:, :-1], lambda rows: draws[rows, k_row[rows]]
    return _chain(draft_tokens, draft_probs, target_probs, uniforms, accept_sampled, validate, from_logits,
                  temperature)
