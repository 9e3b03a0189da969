"""The real generator is lossless: speculative sampling with the transformer target and the shipped draft at T = 1
emits its first two characters with the target's exact law, and three planted bugs in the rule are caught.

Independent reference: the target's own rows (`measure.target_marginals`: p_1 = p(. | prompt), and
p_2 = sum_x p_1(x) p(. | prompt + x) from one row per character), not the rule under test. Statistic: the total
variation between the frequencies of N continuations and the exact law. Tolerance: the 99.9th percentile of the TV
that N draws from the exact law itself show (`measure.sampled_tv`, simulated), so a correct generator fails each
check with probability 0.001, 0.002 over the two. Power: each bug is planted in the running generator (the accept test
or the residual replaced), its continuations must land beyond the tolerance, and its exact first-character law gives
the chance of that at the same N (asserted above 0.99). Lesson 07, section 6, runs the same checks.

tests/library/test_decode.py tests the output law on the MLP target against the draft alone; this file tests the
transformer target, with its KV cache and the sparse rows of the shipped draft, against the rule's own likely bugs.
"""

import numpy as np
import pytest

from specdec import rules
from specdec.generation.measure import first_token_counts, fresh_prompts, sampled_tv, target_marginals, total_variation
from specdec.generation.rows import NumpyRows

N, N_BUG, LEVEL = 800, 500, 0.001


def wrong_laws(p, q):
    """The first character's exact law under each bug (lesson 07, section 6, derives them)."""
    beta = np.minimum(p, q).sum()
    swapped = np.maximum(q - p, 0.0)
    return {"accept every draft": q, "resample from p": np.minimum(p, q) + (1 - beta) * p,
            "residual max(0, q - p)": np.minimum(p, q) + (1 - beta) * swapped / swapped.sum()}


@pytest.fixture(scope="module")
def setting():
    """(draft, target, prompt, p_1, q_1): of 20 held-out prompts, the one where resampling from p moves the
    first character's law furthest (chosen from the exact rows alone, never from samples)."""
    from specdec.models import load_pretrained
    from specdec.models.data import pydoc_text

    draft, target = load_pretrained()
    text = pydoc_text()
    pool = [target.encode(t) for t in fresh_prompts(text, 20, 32, seed=11, start=int(len(text) * 0.95))]
    P = np.stack([target.probs_for_positions(x, len(x))[0] for x in pool])
    Q = draft.next_token_probs(pool, 1.0)
    k = int(np.argmax([total_variation(wrong_laws(p, q)["resample from p"], p) for p, q in zip(P, Q)]))
    return draft, target, pool[k], P[k], Q[k]


@pytest.mark.slow   # ~1 s on an idle machine
def test_the_first_two_characters_follow_the_target(setting):
    draft, target, prompt, _, _ = setting
    counts = first_token_counts(draft, target, prompt, N, gamma=4, tokens=2, seed=5)
    laws = target_marginals(target, prompt)
    assert counts.sum(1).tolist() == [N, N]
    for position in range(2):
        tolerance = np.quantile(sampled_tv(laws[position], N, seed=position), 1 - LEVEL)
        tv = total_variation(counts[position], laws[position])
        assert tv <= tolerance, f"character {position + 1}: TV {tv:.4f} > tolerance {tolerance:.4f}"


def swapped_residual(p, q, weight=1):
    excess = np.maximum(np.asarray(q, dtype=float) - p, 0.0)
    return excess / excess.sum() if excess.sum() > 0 else p


BUGS = {
    "accept every draft": (rules, "token_accepts", lambda u, px, qx: True),
    "resample from p": (NumpyRows, "residual", staticmethod(lambda p, q, weight=1: p)),
    "residual max(0, q - p)": (NumpyRows, "residual", staticmethod(swapped_residual)),
}


@pytest.mark.slow   # ~0.5 s each
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_each_planted_bug_is_caught(setting, bug, monkeypatch):
    draft, target, prompt, p, q = setting
    tolerance = np.quantile(sampled_tv(p, N_BUG, seed=0), 1 - LEVEL)
    power = (sampled_tv(p, N_BUG, source=wrong_laws(p, q)[bug], seed=1) > tolerance).mean()
    assert power > 0.99, f"the check has power {power:.3f} against {bug!r} at N = {N_BUG}: it would prove nothing"
    owner, name, wrong = BUGS[bug]
    monkeypatch.setattr(owner, name, wrong)
    counts = first_token_counts(draft, target, prompt, N_BUG, gamma=4, tokens=2, seed=9)   # drafts one
    tv = total_variation(counts[0], p)
    assert tv > tolerance, (f"{bug!r} planted in the generator, yet its first characters are within the tolerance "
                            f"(TV {tv:.4f} <= {tolerance:.4f}): the check no longer reaches the rule")
