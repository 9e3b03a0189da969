"""The decoding loop: plain autoregressive generation, and speculative generation around it.

One speculative step (Leviathan et al. 2023; target p, draft q, draft length gamma):
the draft proposes gamma tokens one by one, the target scores all gamma + 1
positions in ONE call (`probs_for_positions`), and the verifier keeps the
longest accepted prefix plus one token from the target (a correction at the
first rejection, or a bonus if all gamma were accepted). So every target call
emits between 1 and gamma + 1 tokens.

- temperature 0 (greedy): accept while the drafted token is argmax p (ties: lowest
  id); the output is token for token the target's own greedy decoding.
- temperature T > 0: p and q are BOTH tempered before verification (vLLM #9834
  tempered only one), a draft x ~ q is accepted if u < min(1, p(x)/q(x)), else the
  correction is drawn from normalize(max(0, p - q)); the output is distributed
  exactly as the target's own sampling at temperature T.

    >>> from specdec.models import load_pretrained
    >>> draft, target = load_pretrained()
    >>> prompt = target.encode("The ")
    >>> res = speculative_generate(draft, target, prompt, 20, gamma=4)
    >>> res.tokens == autoregressive_generate(target, prompt, 20), len(res.tokens)
    (True, 20)
"""

import numbers
from dataclasses import dataclass

import numpy as np


@dataclass
class SpeculativeResult:
    """What `speculative_generate` produced, and how."""

    tokens: list            # exactly max_new_tokens new ids
    from_draft: list        # per token: True = an accepted draft, False = the target's correction or bonus
    accepted: list          # per target call: drafts accepted
    drafted: list           # per target call: drafts proposed (gamma, fewer near the end)
    target_calls: int
    draft_calls: int

    @property
    def alpha(self):
        """Measured acceptance rate: accepted / drafts actually tested (drafts after a rejection are not).

        For i.i.d. acceptance with probability alpha this is the maximum-likelihood estimate.
        """
        tested = sum(a + (a < d) for a, d in zip(self.accepted, self.drafted))
        return sum(self.accepted) / tested if tested else float("nan")

    @property
    def tokens_per_call(self):
        """New tokens per target call (compare with theory.expected_tokens_per_step)."""
        return len(self.tokens) / self.target_calls if self.target_calls else float("nan")


def _check(prompt_ids, max_new_tokens, temperature, vocab_size, gamma=1):
    for name, v, low in (("max_new_tokens", max_new_tokens, 0), ("gamma", gamma, 0)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {type(v).__name__}")
        if v < low:
            raise ValueError(f"{name} is {v}, it must be >= {low}")
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or not temperature >= 0:
        raise ValueError(f"temperature must be a number >= 0, got {temperature!r}")
    ids = list(prompt_ids)
    for i, t in enumerate(ids):
        if isinstance(t, bool) or not isinstance(t, numbers.Integral) or not 0 <= t < vocab_size:
            raise ValueError(f"prompt_ids[{i}] is {t!r}, not a token id in [0, {vocab_size})")
    return [int(t) for t in ids]


def _rng(rng):
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def sample_index(row, rng):
    """Draw an index from the distribution `row` (inverse CDF; never an index with zero mass)."""
    cdf = np.cumsum(row)
    # side='right': the first j with cdf[j] > u * total, so row[j] > 0
    return min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(row) - 1)


def verify_sampled(drafted, q_rows, p_rows, rng):
    """Lossless verification of one draft: (accepted ids, the correction or bonus id).

    The rule of `specdec.sampling.speculative_sample`, on NumPy rows; it draws its
    uniforms in the same order, so with the same `random.Random` both give the same ids.
    """
    for i, x in enumerate(drafted):
        p, q = p_rows[i], q_rows[i]
        if not rng.random() < min(1.0, p[x] / q[x]):  # q[x] > 0: x was drawn from q
            residual = np.maximum(p - q, 0.0)
            mass = residual.sum()
            return drafted[:i], sample_index(residual / mass if mass > 0 else p, rng)
    return list(drafted), (sample_index(p_rows[len(drafted)], rng) if len(p_rows) > len(drafted) else None)


def verify_greedy(drafted, p_rows):
    """Greedy verification: keep drafts while each is argmax p (ties: lowest id); then argmax p."""
    best = np.asarray(p_rows).argmax(1).tolist()  # argmax returns the first maximum
    for i, x in enumerate(drafted):
        if x != best[i]:
            return drafted[:i], best[i]
    return list(drafted), best[len(drafted)]


def _greedy_proposer(draft):
    """ids -> argmax q(. | ids): greedy verification never reads q, so no row is built or returned."""
    if hasattr(draft, "argmax_next"):
        return draft.argmax_next
    return lambda ids: int(np.argmax(draft.next_token_probs([ids], 1.0)[0]))


def _proposer(draft, temperature, rng):
    """ids -> (next id drawn from q at temperature > 0, the row q); the draft's own fast path if it has one."""
    if hasattr(draft, "propose"):
        return lambda ids: draft.propose(ids, temperature, rng)

    def propose(ids):
        q = draft.next_token_probs([ids], temperature)[0]
        return sample_index(q, rng), q
    return propose


def autoregressive_generate(target, prompt_ids, max_new_tokens, temperature=0.0, rng=None):
    """max_new_tokens new ids from the target alone, one target call per token."""
    ids = _check(prompt_ids, max_new_tokens, temperature, target.V)
    rng = _rng(rng) if temperature > 0 else None
    start = len(ids)
    for _ in range(max_new_tokens):
        p = target.probs_for_positions(ids, len(ids), temperature or 1.0)[0]
        ids.append(sample_index(p, rng) if temperature > 0 else int(np.argmax(p)))
    return ids[start:]


def speculative_generate(draft, target, prompt_ids, max_new_tokens, gamma, temperature=0.0, rng=None):
    """max_new_tokens new ids, drafted by q in runs of gamma and verified by p; a SpeculativeResult."""
    ids = _check(prompt_ids, max_new_tokens, temperature, target.V, gamma)
    if draft.V != target.V:
        raise ValueError(f"the draft has {draft.V} ids but the target has {target.V}: they must share a vocabulary")
    greedy = temperature == 0
    rng = None if greedy else _rng(rng)
    t = temperature or 1.0
    start = len(ids)
    res = SpeculativeResult([], [], [], [], 0, 0)
    # Greedy drafting needs only ids (the per-step Python work is a visible share of a ~90 us step).
    propose = _greedy_proposer(draft) if greedy else _proposer(draft, temperature, rng)
    while len(ids) - start < max_new_tokens:
        # never draft past the end: this step may emit up to g + 1 tokens
        g = min(gamma, max_new_tokens - (len(ids) - start) - 1)
        base = len(ids)
        if greedy:
            for _ in range(g):
                ids.append(propose(ids))
        else:
            q_rows = []
            for _ in range(g):
                x, q = propose(ids)
                ids.append(x)
                q_rows.append(q)
        res.draft_calls += g
        drafted = ids[base:]
        p_rows = target.probs_for_positions(ids, base, t)      # [g + 1, V], one target call
        res.target_calls += 1
        if greedy:
            kept, extra = verify_greedy(drafted, p_rows)
        else:
            kept, extra = verify_sampled(drafted, q_rows, p_rows, rng)
        del ids[base + len(kept):]
        ids.append(extra)
        res.accepted.append(len(kept))
        res.drafted.append(g)
        res.from_draft += [True] * len(kept) + [False]
    res.tokens = ids[start:]
    return res
