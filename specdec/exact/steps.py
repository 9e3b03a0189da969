"""One verification step of each rule, enumerated exactly: the engine behind `exact.py`.

Each step function takes (p, q, gamma, ctx) and the rule's keyword options, p
and q returning rows for a context (tuples of ids), and returns [(probability, n kept, emitted block)] over
every draft and every outcome of the rule's randomness. Arithmetic is exact when
the rows hold Fractions. The decisions are those of `rules` (block weights and
thresholds, typical's bar) and `multidraft` (recursive rejection); drafted tokens
are drawn from q (a greedy draft is a one-hot q).

    >>> from fractions import Fraction as F
    >>> p, q = (lambda s: (F(1, 2), F(1, 2))), (lambda s: (F(1), F(0)))   # the draft always proposes 0
    >>> STEPS["token"](p, q, 1, ())       # kept w.p. min(1, 1/2): then a bonus; else the residual gives 1
    [(Fraction(1, 4), 1, (0, 0)), (Fraction(1, 4), 1, (0, 1)), (Fraction(1, 2), 0, (1,))]
"""

import itertools
import math
from fractions import Fraction

from ..rules import TYPICAL_DELTA, TYPICAL_EPS, block_threshold, block_weight, entropy, typical_threshold

RULES = ("token", "block", "tree", "greedy", "typical", "token-no-stop", "block-per-token")


# ---- rows in exact arithmetic ----------------------------------------------------------------------------
def _residual(p, q, w=1):
    """normalize(max(0, w p - q)), p where that has no mass: `residual.py`'s rule without float()."""
    excess = [max(0, w * a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    return [e / mass for e in excess] if mass > 0 else list(p)


def _argmax(row):
    return max(range(len(row)), key=lambda j: (row[j], -j))   # ties: the lower id


def _without(q, removed):
    if not removed:
        return q
    kept = [0 if j in removed else v for j, v in enumerate(q)]
    mass = sum(kept)
    return [v / mass for v in kept] if mass > 0 else kept


# ---- one step of each rule: (probability, n kept, emitted block) ----------------------------------------
def _drafts(q, ctx, gamma):
    """Every drafted block x_1..x_gamma with its probability under q (only blocks with mass)."""
    blocks = [((), 1)]
    for _ in range(gamma):
        blocks = [(x + (y,), pr * qy) for x, pr in blocks for y, qy in enumerate(q(ctx + x)) if qy]
    return blocks


def _seen(qrow, x, reported):
    """The draft row the verifier is given for a token x drawn from qrow.

    "q": qrow itself. "one-hot": 1 on x (a drafter with no probabilities treated as
    deterministic: lossless, as any fixed draft is). "ones": 1 for EVERY token, the
    `draft_probs = 1` fallback that broke block verification (vllm-ascend#7603).
    """
    if reported == "q":
        return qrow
    if reported not in ("one-hot", "ones"):
        raise ValueError(f"reported is {reported!r}; choose 'q', 'one-hot' or 'ones'")
    return [1 if reported == "ones" or y == x else 0 for y in range(len(qrow))]


def _token(p, q, gamma, ctx, reported="q"):
    def walk(s, prob):
        prow = p(ctx + s)
        if len(s) == gamma:
            return [(prob * v, len(s), s + (y,)) for y, v in enumerate(prow) if v]
        out = []
        for x, qx in enumerate(q(ctx + s)):
            if qx:
                seen = _seen(q(ctx + s), x, reported)
                keep = min(1, prow[x] / seen[x])                 # P(token_accepts) for u ~ U[0, 1)
                if keep:
                    out += walk(s + (x,), prob * qx * keep)
                if keep < 1:
                    out += [(prob * qx * (1 - keep) * v, len(s), s + (y,))
                            for y, v in enumerate(_residual(prow, seen)) if v]
        return out
    return walk((), 1)


def _block(p, q, gamma, ctx, per_token=False, reported="q"):
    out = []
    for x, prob in _drafts(q, ctx, gamma):
        seen = [_seen(q(ctx + x[:i]), x[i], reported) for i in range(gamma)]   # the rows the verifier reads
        w, h = [1], []
        for i in range(gamma):
            prow = p(ctx + x[:i])
            w.append(block_weight(w[i], prow[x[i]], seen[i][x[i]]))
            if per_token:                                        # the bug: each token's own test
                h.append(min(1, prow[x[i]] / seen[i][x[i]]))
            elif i + 1 == gamma:
                h.append(w[gamma])
            else:
                z = sum(max(0, w[i + 1] * a - b) for a, b in zip(p(ctx + x[:i + 1]), seen[i + 1]))
                h.append(block_threshold(w[i + 1], z))
        for n in range(gamma + 1):                               # n = the last i with eta_i < h_i
            pn = (h[n - 1] if n else 1) * math.prod((1 - v for v in h[n:]), start=Fraction(1))
            if pn:
                prow = p(ctx + x[:n])
                row = prow if n == gamma else _residual(prow, seen[n], 1 if per_token else w[n])
                out += [(prob * pn * v, n, x[:n] + (y,)) for y, v in enumerate(row) if v]
    return out


def _token_no_stop(p, q, gamma, ctx):
    out = []
    for x, prob in _drafts(q, ctx, gamma):
        branches = [((), 0, prob)]                               # every position verified, rows of the DRAFTED prefix
        for i in range(gamma):
            prow, qrow = p(ctx + x[:i]), q(ctx + x[:i])
            keep = min(1, prow[x[i]] / qrow[x[i]])
            residual = _residual(prow, qrow)
            branches = ([(s + (x[i],), k + 1, pr * keep) for s, k, pr in branches if keep]
                        + [(s + (y,), k, pr * (1 - keep) * v) for s, k, pr in branches for y, v in enumerate(residual)
                           if v and keep < 1])
        out += [(pr * v, k, s + (y,)) for s, k, pr in branches for y, v in enumerate(p(ctx + x)) if v]
    return out


def _greedy(p, q, gamma, ctx, test=None):
    out = []
    for x, prob in _drafts(q, ctx, gamma):
        n = 0
        while n < gamma and (test(p(ctx + x[:n]), x[n]) if test else x[n] == _argmax(p(ctx + x[:n]))):
            n += 1
        out.append((prob, n, x[:n] + (_argmax(p(ctx + x[:n])),)))
    return out


def _typical(p, q, gamma, ctx, eps=TYPICAL_EPS, delta=TYPICAL_DELTA):
    # Subtle: exp(-H) is irrational; the threshold is a float, compared exactly with the Fraction p(x).
    return _greedy(p, q, gamma, ctx, lambda prow, x: prow[x] > typical_threshold(entropy(prow), eps, delta))


def _candidates(qrow, width, replace):
    """Every ordered candidate list with its probability, and the rows q_j each was drawn from."""
    if replace:
        for c in itertools.product(range(len(qrow)), repeat=width):
            prob = math.prod((qrow[x] for x in c), start=Fraction(1))
            if prob:
                yield c, prob, [qrow] * width
        return
    width = min(width, sum(1 for v in qrow if v))               # fewer tokens with mass than width: draw them all
    for c in itertools.permutations(range(len(qrow)), width):
        rows = [_without(qrow, set(c[:j])) for j in range(width)]
        prob = math.prod((rows[j][x] for j, x in enumerate(c)), start=Fraction(1))
        if prob:
            yield c, prob, rows


def recursive_rejection_outcomes(prow, qrow, width, replace, naive=False):
    """[(probability, accepted index or None, token)] for one position (naive: q_j = q even without replacement)."""
    out = []
    for c, prob, rows in _candidates(qrow, width, replace):
        r, reach = prow, prob
        for j, x in enumerate(c):
            qj = qrow if naive else rows[j]
            keep = min(1, r[x] / qj[x])
            out.append((reach * keep, j, x))
            reach *= 1 - keep
            r = _residual(r, qj)
        out += [(reach * v, None, y) for y, v in enumerate(r) if v and reach]
    return out


def _tree(p, q, gamma, ctx, width=2, replace=False, naive=False):
    def walk(s, prob):
        prow = p(ctx + s)
        if len(s) == gamma:
            return [(prob * v, len(s), s + (y,)) for y, v in enumerate(prow) if v]
        out = []
        for pr, j, y in recursive_rejection_outcomes(prow, q(ctx + s), width, replace, naive):
            if pr:
                out += walk(s + (y,), prob * pr) if j is not None else [(prob * pr, len(s), s + (y,))]
        return out
    return walk((), 1)


STEPS = {"token": _token, "block": _block, "tree": _tree, "greedy": _greedy, "typical": _typical,
          "token-no-stop": _token_no_stop, "block-per-token": lambda *a, **o: _block(*a, per_token=True, **o)}
