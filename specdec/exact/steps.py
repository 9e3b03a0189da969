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

from ..residual import argmax, residual_distribution, residual_mass
from ..rules import TYPICAL_DELTA, TYPICAL_EPS, block_threshold, block_weight, entropy, typical_threshold

RULES = ("token", "block", "tree", "greedy", "typical", "token-no-stop", "block-per-token")


# ---- rows in exact arithmetic ----------------------------------------------------------------------------
def _residual(p, q, w=1):
    """normalize(max(0, w p - q)), p where that has no mass: `residual.py`'s rule, in the rows' own arithmetic."""
    return residual_distribution(p, q, w, exact=True)


def _without(q, removed):
    if not removed:
        return q
    kept = [0 if j in removed else v for j, v in enumerate(q)]
    mass = sum(kept)
    return [v / mass for v in kept] if mass > 0 else kept


def _pick(row, how):
    """{token: probability} of the token taken from a distribution `row`: a draw ("sample") or its argmax."""
    return {argmax(row): 1} if how == "argmax" else {y: v for y, v in enumerate(row) if v}


def _pick_above(row, keep):
    """{token: probability} of the token drawn from `row` by inverting its running sum at the uniform u that was
    just rejected (u >= keep, so u is uniform on [keep, 1)): the catalogued mistake of reusing the acceptance
    uniform for the correction. Token y takes u in [row[0] + ... + row[y - 1], row[0] + ... + row[y])."""
    out, low = {}, 0
    for y, v in enumerate(row):
        high = low + v
        share = min(high, 1) - max(low, keep)
        if v and share > 0:
            out[y] = share / (1 - keep)
        low = high
    return out


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
    return [1 if reported == "ones" or y == x else 0 for y in range(len(qrow))]


def _token(p, q, gamma, ctx, reported="q", correction="residual", bonus="sample", accept="ratio", stop=True):
    """The token rule; each other value of a switch is a catalogued mistake (VARIANTS).

    stop=False goes on verifying after the first rejection and keeps the later drafts that pass, so the
    kept tokens need not be a prefix of the draft: such an outcome has n = None (no verifier may give it).
    """
    def walk(s, kept, fix, prob):
        if fix is not None and (stop or len(s) == gamma):
            return [(prob, len(kept) if s[:len(kept)] == kept else None, kept + (fix,))]
        prow = p(ctx + s)
        if len(s) == gamma:
            return [(prob * v, len(s), s + (y,)) for y, v in _pick(prow, bonus).items()]
        out, qrow = [], q(ctx + s)
        for x, qx in enumerate(qrow):
            if not qx:
                continue
            seen = _seen(qrow, x, reported)
            keep = min(1, prow[x] if accept == "p" else prow[x] / seen[x])   # P(token_accepts) for u ~ U[0, 1)
            if keep:
                out += walk(s + (x,), kept + (x,), fix, prob * qx * keep)
            if keep < 1 and fix is not None:
                out += walk(s + (x,), kept, fix, prob * qx * (1 - keep))
            elif keep < 1:
                from_p = correction == "p" or (correction == "p_after_step_0" and s)
                row = prow if from_p else _residual(prow, seen)
                picks = _pick_above(row, keep) if correction == "same_u" else \
                    _pick(row, "argmax" if correction == "argmax" else "sample")
                for y, v in picks.items():
                    out += walk(s + (x,), kept, y, prob * qx * (1 - keep) * v)
        return out
    return walk((), (), None, 1)


def kept_law(h, keep="last"):
    """[P(n = 0), ..., P(n = K)] for thresholds h_1..h_K and independent eta_i ~ U[0, 1).

    keep="last": n is the LAST i with eta_i < h_i (block verification); keep="first": the passes
    before the first failure (a catalogued mistake: the token rule's stopping on the block thresholds).

    >>> from fractions import Fraction as F
    >>> kept_law([F(1, 2), F(1)]), kept_law([F(1, 2), F(1)], keep="first")
    ([Fraction(0, 1), Fraction(0, 1), Fraction(1, 1)], [Fraction(1, 2), Fraction(0, 1), Fraction(1, 2)])
    """
    k = len(h)
    if keep == "last":
        return [(h[m - 1] if m else 1) * math.prod((1 - v for v in h[m:]), start=Fraction(1)) for m in range(k + 1)]
    return [math.prod(h[:m], start=Fraction(1)) * (1 - h[m] if m < k else 1) for m in range(k + 1)]


def block_decisions(tokens, q, p, test="block", ratio_q=True, mass_weight=True):
    """(weights [w_0 .. w_K], thresholds [h_1 .. h_K]) for a drafted block, given its rows q[i], p[i] (exact).

    The rule's own decisions (`rules.block_weight`, `rules.block_threshold`, `residual.residual_mass`);
    each other value of a switch is a catalogued mistake (VARIANTS["block"]).
    """
    w, h, k = [1], [], len(tokens)
    for i, x in enumerate(tokens):
        w.append(block_weight(w[i], p[i][x], q[i][x] if ratio_q else 1))
    for i in range(1, k + 1):
        if test == "token":                                      # vllm-ascend#7807: each token's own test
            h.append(min(1, p[i - 1][tokens[i - 1]] / q[i - 1][tokens[i - 1]]))
        elif i == k:
            h.append(w[k])
        else:
            h.append(block_threshold(w[i], residual_mass(p[i], q[i], w[i] if mass_weight else 1, exact=True)))
    return w, h


def _block(p, q, gamma, ctx, reported="q", test="block", keep="last", ratio_q=True, mass_weight=True,
           residual_weight=True, bonus_row="K"):
    out = []
    for x, prob in _drafts(q, ctx, gamma):
        seen = [_seen(q(ctx + x[:i]), x[i], reported) for i in range(gamma)]   # the rows the verifier reads
        prows = [p(ctx + x[:i]) for i in range(gamma + 1)]
        w, h = block_decisions(x, seen, prows, test, ratio_q, mass_weight)
        for n, pn in enumerate(kept_law(h, keep)):
            if pn:
                if n == gamma:
                    row = prows[gamma] if bonus_row == "K" else prows[max(gamma - 1, 0)]
                else:
                    row = _residual(prows[n], seen[n], w[n] if residual_weight else 1)
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
        while n < gamma and (test(p(ctx + x[:n]), x[n]) if test else x[n] == argmax(p(ctx + x[:n]))):
            n += 1
        out.append((prob, n, x[:n] + (argmax(p(ctx + x[:n])),)))
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
         "token-no-stop": _token_no_stop,
         "block-per-token": lambda *a, **o: _block(*a, test="token", residual_weight=False, **o)}

# The switches of the token and block rules: the first value of each is the rule, every other one a known
# mistake (the exercises' catalogues) or a shipped production bug. "block-per-token" is block verification with
# the token rule's test and residual, as vllm-ascend#7807 shipped it.
VARIANTS = {
    "token": {"reported": ("q", "one-hot", "ones"), "correction": ("residual", "p", "p_after_step_0", "argmax",
                                                       "same_u"),
              "bonus": ("sample", "argmax"), "accept": ("ratio", "p"), "stop": (True, False)},
    "block": {"reported": ("q", "one-hot", "ones"), "test": ("block", "token"), "keep": ("last", "first"),
              "ratio_q": (True, False), "mass_weight": (True, False), "residual_weight": (True, False),
              "bonus_row": ("K", "K - 1")},
}
VARIANTS["block-per-token"] = {"reported": VARIANTS["block"]["reported"]}
