"""The token and block rules' named variants (`specdec.exact.steps.VARIANTS`) against independent enumerators.

Each catalogued mistake of exercises 4 and 6 is a switch of the library's one exact enumerator per rule;
the graders build their wrong laws from it. These references are written here from each mistake's
definition, position by position (rows given per position, each x_i drawn from q[i]), sharing no code
with the library: a switch that enumerated the wrong law would disagree with them.
"""

import itertools
import math
import random
from fractions import Fraction as F

import pytest

from specdec.exact import step_outcomes
from specdec.exact.steps import VARIANTS

NOT_PREFIX = "not a prefix"


def _law(row, how):
    if how == "argmax":
        return {max(range(len(row)), key=lambda j: (row[j], -j)): 1}
    return {j: v / sum(row) for j, v in enumerate(row) if v}


def _reused(row, keep):
    """The token `row` gives when its CDF is inverted at the acceptance uniform u that was rejected: u is
    uniform on [keep, 1); token y is the first whose running share of the row exceeds u."""
    total, out = sum(row), {}
    bounds = [sum(row[:j], F(0)) / total for j in range(len(row) + 1)]
    for y in range(len(row)):
        overlap = max(F(0), min(bounds[y + 1], F(1)) - max(bounds[y], keep))
        if row[y] and overlap:
            out[y] = overlap / (1 - keep)
    return out


def token_reference(q, p, k, correction="residual", bonus="sample", stop=True, accept="ratio"):
    """{(n accepted, emitted block): probability}; an output whose kept tokens are not a draft prefix: NOT_PREFIX."""
    out = {}

    def end(drafted, kept, prob, tokens):
        for y, v in tokens.items():
            key = (len(kept), kept + (y,)) if drafted[:len(kept)] == kept else NOT_PREFIX
            out[key] = out.get(key, 0) + prob * v

    def walk(i, drafted, kept, fix, prob):
        if fix is not None and (stop or i == k):
            return end(drafted, kept, prob, {fix: 1})
        if i == k:
            return end(drafted, kept, prob, _law(p[k], bonus))
        for x, qx in enumerate(q[i]):
            keep = min(1, (p[i][x] if accept == "p" else p[i][x] / qx)) if qx else 0
            if keep:
                walk(i + 1, drafted + (x,), kept + (x,), fix, prob * qx * keep)
            if qx and keep < 1 and fix is not None:
                walk(i + 1, drafted + (x,), kept, fix, prob * qx * (1 - keep))
            elif qx and keep < 1:
                excess = [max(0, a - b) for a, b in zip(p[i], q[i])]
                from_p = correction == "p" or (correction == "p_after_step_0" and i > 0)
                row = p[i] if from_p or not sum(excess) else excess
                law = _reused(row, keep) if correction == "same_u" else \
                    _law(row, "argmax" if correction == "argmax" else "sample")
                for y, v in law.items():
                    walk(i + 1, drafted + (x,), kept, y, prob * qx * (1 - keep) * v)
    walk(0, (), (), None, 1)
    return out


def block_reference(q, p, k, test="block", mass_weight=True, ratio_q=True, keep="last", residual_weight=True,
                    bonus_row="K"):
    """{(n kept, emitted block): probability} of block verification with these switches (Sun et al. 2024)."""
    out = {}
    for tokens in itertools.product(*[[x for x, v in enumerate(row) if v] for row in q[:k]]):
        prob = math.prod((q[i][x] for i, x in enumerate(tokens)), start=F(1))
        w, h = [F(1)], []
        for i, x in enumerate(tokens):
            w.append(min(1, w[i] * p[i][x] / (q[i][x] if ratio_q else 1)))
        for i in range(1, k + 1):
            if test == "token":
                h.append(min(1, p[i - 1][tokens[i - 1]] / q[i - 1][tokens[i - 1]]))
            elif i == k:
                h.append(w[k])
            elif w[i] >= 1:
                h.append(F(1))
            else:
                z = sum(max(0, (w[i] if mass_weight else 1) * a - b) for a, b in zip(p[i], q[i]))
                h.append(z / (z + 1 - w[i]))
        if keep == "last":   # n = the last i with eta_i < h_i
            kept = [(h[m - 1] if m else 1) * math.prod((1 - v for v in h[m:]), start=F(1)) for m in range(k + 1)]
        else:                # the passes before the first failure
            kept = [math.prod(h[:m], start=F(1)) * (1 - h[m] if m < k else 1) for m in range(k + 1)]
        for n, pn in enumerate(kept):
            if not pn:
                continue
            if n == k:
                row = p[k] if bonus_row == "K" else p[k - 1]
            else:
                excess = [max(0, (w[n] if residual_weight else 1) * a - b) for a, b in zip(p[n], q[n])]
                row = excess if sum(excess) > 0 else p[n]
            for y, v in enumerate(row):
                if v:
                    out[n, tokens[:n] + (y,)] = out.get((n, tokens[:n] + (y,)), 0) + prob * pn * v / sum(row)
    return out


def _rows(rng, count, vocab, positive=False):
    rows = []
    for _ in range(count):
        weights = [rng.randint(1 if positive else 0, 4) for _ in range(vocab)]
        while not any(weights):
            weights = [rng.randint(0, 4) for _ in range(vocab)]
        rows.append([F(v, sum(weights)) for v in weights])
    return rows


def _library(rule, q, p, k, **switch):
    law = step_outcomes(lambda s: p[len(s)], lambda s: q[len(s)], k, rule, **switch)
    out = {}
    for (n, block), prob in law.items():
        key = NOT_PREFIX if n is None else (n, block)
        out[key] = out.get(key, 0) + prob
    return out


def _switches(rule):
    """The rule, then each variant alone (the first value of each switch is the rule's own)."""
    yield {}
    for name, values in VARIANTS[rule].items():
        if name != "reported":
            for value in values[1:]:
                yield {name: value}


def _positive(law):
    return {key: value for key, value in law.items() if value}


@pytest.mark.parametrize("seed", range(4))
def test_every_token_variant_is_the_law_of_its_mistake(seed):
    rng = random.Random(f"token/{seed}")
    for _ in range(6):
        k, vocab = rng.randint(0, 3), rng.randint(2, 3)
        q, p = _rows(rng, k, vocab, positive=rng.random() < 0.5), _rows(rng, k + 1, vocab)
        for switch in _switches("token"):
            assert _positive(_library("token", q, p, k, **switch)) == _positive(token_reference(q, p, k, **switch)), \
                (switch, q, p)


@pytest.mark.parametrize("seed", range(4))
def test_every_block_variant_is_the_law_of_its_mistake(seed):
    rng = random.Random(f"block/{seed}")
    for _ in range(6):
        k, vocab = rng.randint(1, 3), rng.randint(2, 3)
        q, p = _rows(rng, k, vocab, positive=rng.random() < 0.5), _rows(rng, k + 1, vocab)
        for switch in _switches("block"):
            assert _library("block", q, p, k, **switch) == _positive(block_reference(q, p, k, **switch)), (switch, q, p)


def test_block_per_token_is_the_shipped_bug_of_two_switches():
    """vllm-ascend#7807 shipped block verification with the token rule's test AND its residual."""
    rng = random.Random(7)
    q, p = _rows(rng, 2, 3, positive=True), _rows(rng, 3, 3)
    assert _library("block-per-token", q, p, 2) == _positive(block_reference(q, p, 2, test="token",
                                                                             residual_weight=False))


def test_every_variant_changes_the_law_somewhere():
    """No switch is a no-op: on some rows each gives another law than the rule (else it would catch nothing)."""
    rng = random.Random(11)
    rows = [(_rows(rng, 2, 3, positive=True), _rows(rng, 3, 3)) for _ in range(30)]
    for rule in ("token", "block"):
        for switch in list(_switches(rule))[1:]:
            assert any(_library(rule, q, p, 2, **switch) != _library(rule, q, p, 2) for q, p in rows), (rule, switch)


def test_a_value_no_variant_has_is_refused_by_name():
    p = q = lambda s: (F(1, 2), F(1, 2))
    with pytest.raises(ValueError, match="correction is 'softmax'"):
        step_outcomes(p, q, 1, "token", correction="softmax")
    with pytest.raises(ValueError, match="keep is 1"):
        step_outcomes(p, q, 1, "block", keep=1)
    with pytest.raises(TypeError, match="stop is not an option of rule 'block'"):
        step_outcomes(p, q, 1, "block", stop=False)


@pytest.mark.slow
def test_reusing_the_acceptance_uniform_has_the_law_a_simulation_gives():
    """correction="same_u" against a simulation of the mistake itself (one uniform for the test and the draw)."""
    q, p = [[F(1, 2), F(1, 4), F(1, 4)]], [[F(1, 8), F(1, 2), F(3, 8)], [F(1), F(0), F(0)]]
    law = _library("token", q, p, 1, correction="same_u")
    rng, counts, n = random.Random(5), {}, 40000
    for _ in range(n):
        x = rng.choices(range(3), weights=[float(v) for v in q[0]])[0]
        u = rng.random()
        if u < min(1, p[0][x] / q[0][x]):
            key = (1, (x, 0))
        else:
            excess = [max(0, a - b) for a, b in zip(p[0], q[0])]
            cut, y = u * sum(excess), 0
            while cut >= sum(excess[:y + 1]):
                y += 1
            key = (0, (y,))
        counts[key] = counts.get(key, 0) + 1
    assert set(counts) == set(_positive(law))
    for key, prob in _positive(law).items():
        assert abs(counts[key] / n - float(prob)) < 5 * math.sqrt(float(prob) * (1 - float(prob)) / n), key
    # Token 1 takes u in [0, 4/5) of the residual [0, 4/5, 1/5]: after rejecting x = 0 (u >= 1/4), fewer than 4/5.
    assert law[(0, (1,))] != _library("token", q, p, 1)[(0, (1,))]
