"""Exercise 6's cases: `block_verify`, block verification, graded exactly and statistically (100 points).

As exercise 4 (the shared builders are in `samplers.py`). Exact cases (76
points): outcomes no random number can change (p == q keeps the whole block
through its 0/0 thresholds; p(x) = 0 ends it; a later token rescues a prefix
that failed its own test; the bonus row), the same seed giving the same
result, the shape of a random output, ValueError on bad inputs. Statistical
cases (24 points): the parent draws each block from q, sends N = 2000 seeded
calls, and holds the counts to the exact law of `exact.step_outcomes(p, q, K,
"block")`, in Fractions: the number of tokens kept twice (on rows where only
some mistakes change it) and the joint law of (tokens kept, emitted block)
once, with the exact binomial intervals of `stats.law_test` (a correct
function fails a case with probability <= 1e-4); half of each one's calls are
replayed in a fresh sandbox and must give the same outputs (`replay.py`).

The catalogue of mistakes is one rule with switches (`wrong_block`), and
`rule_law` enumerates each switched rule's law exactly. A statistical case's
rows are redrawn (`samplers.law_case`) until every mistake is either exactly right there or passes
with probability <= MISS = 1e-5, never in between: which mistakes fail which
case does not depend on luck (nor on how a learner orders their draws).
Which of them, the kinds fix (the joint-law case leaves four of them free;
each of those also fails a case no other mistake fails, so the signatures
stay distinct for every seed).

    >>> EXERCISE.max_score, sum(c.points for c in EXERCISE.public)
    (100, 30)
    >>> from fractions import Fraction as F
    >>> q, p = [[F(2, 3), F(1, 3)]] * 2, [[F(1, 3), F(2, 3)]] * 3   # the statement's worked example
    >>> mean = lambda law: sum(pr * n for (n, _), pr in law.items())   # E[tokens kept]: right, then vllm-ascend#7807
    >>> mean(rule_law(q, p, 2)), mean(rule_law(q, p, 2, test="token"))
    (Fraction(11, 9), Fraction(14, 9))
"""

import random

from exercises.common import samplers
from exercises.common.rows import dyadic_row
from exercises.common.samplers import draw, one_hot
from grader.cases import Exercise, Kind, Mistake
from specdec.block import block_verify
from specdec.exact import step_outcomes
from specdec.exact.steps import block_decisions, kept_law

FUNC = "block_verify"


def exact(name, points, tokens, q, p, hidden=True, hint=""):
    return samplers.exact(FUNC, block_verify, name, points, tokens, q, p, hidden, hint)


# ---- the rule with one switch per known mistake (trusted, parent only; floats or Fractions) ----------------
RIGHT = {"test": "block", "mass_weight": True, "ratio_q": True, "keep": "last", "residual_weight": True,
         "bonus_row": "K"}


def _decide(tokens, q, p, rule):
    """(weights [w_0 .. w_K], thresholds [h_1 .. h_K]) of the rule with these switches (the library's decisions)."""
    return block_decisions(tokens, q, p, rule["test"], rule["ratio_q"], rule["mass_weight"])


def _pick(h, eta, keep):
    if keep == "last":
        return max((i for i in range(1, len(h) + 1) if eta[i - 1] < h[i - 1]), default=0)
    return next((i for i in range(len(h)) if eta[i] >= h[i]), len(h))


def _next_row(tokens, q, p, w, n, rule):
    """Unnormalised weights of the emitted token after n kept, or None (all kept and no row K)."""
    k = len(tokens)
    if n == k:
        return (p[k] if rule["bonus_row"] == "K" else p[k - 1]) if len(p) > k else None
    excess = [max(0, (w[n] if rule["residual_weight"] else 1) * a - b) for a, b in zip(p[n], q[n])]
    return excess if sum(excess) > 0 else p[n]


def wrong_block(tokens, q, p, rng, source="rng", lengths=True, **rule):
    """Block verification with the given switches (none: the right rule). Runs only on the grader's own cases."""
    rule = dict(RIGHT, **rule)
    if lengths and (len(q) != len(tokens) or len(p) < len(tokens)):
        raise ValueError("invalid lengths")
    if any(q[i][x] == 0 for i, x in enumerate(tokens)):
        raise ValueError("q(x) = 0")
    uniform = random.random if source == "module" else rng.random
    eta = [uniform() for _ in tokens]
    w, h = _decide(tokens, q, p, rule)
    n = _pick(h, eta, rule["keep"])
    row = _next_row(tokens, q, p, w, n, rule)
    y = draw(row, uniform()) if row is not None else None
    return {"accepted_tokens": list(tokens[:n]), "bonus_token": y, "acceptance_count": n}


def rule_law(q, p, k, **rule):
    """{(n kept, emitted block): probability} of the rule with these switches, each x_i drawn from q[i] (exact).

    The library's exact block rule with the same switches (`specdec.exact`, its VARIANTS), on rows per position.
    """
    return step_outcomes(lambda s: p[len(s)], lambda s: q[len(s)], k, "block", **rule)


def possible(tokens, q, p):
    """{(n kept, emitted token)} block verification can give on this draft (None: no bonus): `stats.outputs`.

    Exact: the right rule's weights and thresholds in Fractions of the float rows the case sends.

    >>> sorted(possible([0, 1], [[2 / 3, 1 / 3]] * 2, [[1 / 3, 2 / 3], [1 / 3, 2 / 3], [0.0, 1.0]]), key=str)
    [(2, 1)]
    """
    fq, fp = samplers.exact_rows(q), samplers.exact_rows(p)
    w, h = _decide(tokens, fq, fp, RIGHT)
    out = set()
    for n, pn in enumerate(kept_law(h, "last")):
        row = _next_row(tokens, fq, fp, w, n, RIGHT) if pn else []
        out.update([(n, None)] if row is None else ((n, y) for y, v in enumerate(row) if v > 0))
    return out


def _mistake(name, cause, **switch):
    return Mistake(name, cause, {FUNC: lambda t, q, p, rng: wrong_block(t, q, p, rng, **switch)}), switch


_CATALOGUE = (
    _mistake("per_token_test", "each token is tested alone, eta_i < min(1, p/q), as vllm-ascend#7807 shipped; the "
             "test is eta_i < h_i with the block thresholds h_i = Z_i / (Z_i + 1 - w_i)", test="token"),
    _mistake("per_token_residual", "the next token is drawn from the token rule's residual max(0, p_n - q_n); block "
             "verification weights it: max(0, w_n p_n - q_n)", residual_weight=False),
    _mistake("mass_without_weight", "the residual mass in the threshold is sum max(0, p_i - q_i); it is "
             "Z_i = sum max(0, w_i p_i - q_i), with the weight", mass_weight=False),
    _mistake("first_failure", "tokens are kept only up to the first failed test; keep up to the LAST i with "
             "eta_i < h_i (a later pass rescues the prefix)", keep="first"),
    _mistake("ratio_without_q", "the weights use p(x_i) alone, as if q(x_i) were 1 (the fallback of "
             "vllm-ascend#7603); w_i = min(1, w_{i-1} p(x_i) / q(x_i))", ratio_q=False),
    _mistake("bonus_wrong_row", "after a full acceptance the bonus is drawn from target_probs[K - 1]; it comes "
             "from row K, target_probs[K]", bonus_row="K - 1"),
    _mistake("module_random", "the uniforms come from the module-level random (or another generator), not from "
             "the rng argument", source="module"),
    _mistake("no_length_check", "no ValueError when len(draft_probs) != K or len(target_probs) < K",
             lengths=False),
)
MISTAKES = tuple(m for m, _ in _CATALOGUE)
RULES = {m.name: s for m, s in _CATALOGUE if set(s) <= set(RIGHT)}   # the mistakes that change the law


# ---- statistical kinds ---------------------------------------------------------------------------------------
def _reference_law(q, p, k):
    """The exact law of (n, emitted block), from `theory`'s enumeration (not from `rule_law`)."""
    return step_outcomes(lambda s: p[len(s)], lambda s: q[len(s)], k, "block")


def _statistical(kind, rng, rows, off, joint, either=frozenset()):
    """`samplers.law_case` with every mistake of the rule (RULES), each through `rule_law`."""
    mistakes = {name: (lambda q, p, k, switch=switch: rule_law(q, p, k, **switch)) for name, switch in RULES.items()}
    return samplers.law_case(kind, FUNC, rng, rows, _reference_law, mistakes, off, either, joint, possible=possible)


def _one_doubtful_rows(rng):
    """K = 3: the first position decides (p_0 != q_0), then p = q: n is 0 or 3 (Z_i = 0 when w_i < 1)."""
    same = [dyadic_row(rng, 3, positive=range(3)) for _ in range(2)]
    return 3, [dyadic_row(rng, 3, positive=range(3))] + same, [dyadic_row(rng, 3)] + same + [dyadic_row(rng, 3)]


def _deterministic_rows(rng):
    """K = 3 with one-hot draft rows (an n-gram drafter's fixed block): w_i = p(x_1) ... p(x_i), capped."""
    tokens = [rng.randrange(3) for _ in range(3)]
    p = [dyadic_row(rng, 3, positive=[x]) for x in tokens] + [dyadic_row(rng, 3)]
    return 3, [one_hot(3, x) for x in tokens], p


def _joint_rows(rng):
    """K = 2, V = 3. Row 1 puts little draft mass on a, some on b, where the target has more (so that for
    w_1 <= q_1(b) / p_1(b) the weighted residual leaves b out and the unweighted one does not); row 2 = row 1."""
    a, b, c = rng.sample(range(3), 3)
    small, some = rng.randint(1, 4), rng.randint(6, 12)
    more = rng.randint(some + 2, 20)
    rest = rng.randint(4, 32 - more)
    q1, p1 = [0.0] * 3, [0.0] * 3
    q1[a], q1[b], q1[c] = small / 32, some / 32, (32 - small - some) / 32
    p1[a], p1[b], p1[c] = rest / 32, more / 32, (32 - rest - more) / 32
    return 2, [dyadic_row(rng, 3, positive=range(3)), q1], [dyadic_row(rng, 3), p1, list(p1)]


def _length_one_doubtful(rng, kind):
    return _statistical(kind, rng, _one_doubtful_rows, {"per_token_test", "first_failure", "ratio_without_q"}, False)


def _length_deterministic(rng, kind):
    return _statistical(kind, rng, _deterministic_rows, {"mass_without_weight", "per_token_test", "first_failure"},
                        False)


def _joint(rng, kind):
    # Row 2 = row 1, so the wrong bonus row has the right law here; the other mistakes of the rule are either
    # exactly right or caught, depending on the rows drawn (each also fails a case only it fails).
    return _statistical(kind, rng, _joint_rows, {"per_token_residual"}, True,
                        frozenset(RULES) - {"per_token_residual", "bonus_wrong_row"})


# ---- exact kinds -------------------------------------------------------------------------------------------
def _same_rows(rng, kind):
    """p == q over K = 3 (every w_i = 1, Z_i = 0: the 0/0 thresholds), all kept; the bonus row one-hot on a token
    that row K - 1 gives 0 (the wrong row never draws it). Drafted tokens with p <= 1/4: weights without q keep
    all three at most 1/64 of the time."""
    while True:
        rows = [dyadic_row(rng, 4) for _ in range(3)]
        small = [[x for x in range(4) if 0 < row[x] <= 0.25] for row in rows]
        zero = [y for y in range(4) if rows[2][y] == 0]
        if all(small) and zero:
            break
    tokens = [rng.choice(s) for s in small]
    return exact(kind.name, kind.points, tokens, rows, rows + [one_hot(4, rng.choice(zero))], hint=kind.hint)


def _zero_in_the_middle(rng, kind):
    """x_1 certain, p_1(x_2) = 0 with a one-token residual, then p = q: keep x_1, emit that token."""
    x1, x2, a = rng.randrange(2), rng.randrange(2), rng.randint(4, 28) / 32
    last = dyadic_row(rng, 2, positive=[0, 1])
    x3 = rng.choices(range(2), weights=last)[0]
    q = [one_hot(2, x1), [a, 1 - a] if x2 == 0 else [1 - a, a], last]
    p = [one_hot(2, x1), one_hot(2, 1 - x2), last] + [dyadic_row(rng, 2)] * rng.randint(0, 1)
    return exact(kind.name, kind.points, [x1, x2, x3], q, p, hint=kind.hint)


def _rescued(rng, kind):
    """K = 2, no row K: w_1 = 1/2 with Z_1 = 0 (h_1 = 0), then p_1(x_2) = 2 q_1(x_2), so w_2 = 1 = h_2: both kept.

    Dyadic rows, so every float above is exact. p_0(x_1) <= 1/8 and p_1(x_2) <= 1/2 (weights without q keep
    both at most 1/16 of the time).
    """
    x1, x2 = rng.randrange(3), rng.randrange(3)
    c, d = rng.choice([4, 6, 8]), rng.randint(2, 8)
    q0 = _fill(rng, {x1: c}, lambda y, v: True)
    p0 = _fill(rng, {x1: c // 2}, lambda y, v: True)
    q1 = _fill(rng, {x2: d}, lambda y, v: v > 0)
    p1 = _fill(rng, {x2: 2 * d}, lambda y, v: v <= 2 * q1[y] * 32)
    return exact(kind.name, kind.points, [x1, x2], [q0, q1], [p0, p1], hint=kind.hint)


def _fill(rng, fixed, ok, vocab=3, total=32):
    """A row of k/32 with the entries in `fixed`, the rest of the mass spread at random, each other entry ok(y, k)."""
    while True:
        weights = [fixed.get(y, 0) for y in range(vocab)]
        others = [y for y in range(vocab) if y not in fixed]
        for _ in range(total - sum(weights)):
            weights[rng.choice(others)] += 1
        if all(ok(y, weights[y]) for y in others):
            return [v / total for v in weights]


def _all_kept(with_row_k):
    """K in 1..3, one-hot target rows on the drafted tokens (every ratio >= 1, every p(x) = 1): all kept."""
    def make(rng, kind):
        k = rng.randint(1, 3)
        tokens = [rng.randrange(3) for _ in range(k)]
        q = [dyadic_row(rng, 3, positive=[x]) for x in tokens]
        p = [one_hot(3, x) for x in tokens]
        if with_row_k:
            p.append(one_hot(3, rng.choice([y for y in range(3) if y != tokens[-1]])))
        return exact(kind.name, kind.points, tokens, q, p, hint=kind.hint)
    return make


def _kind(name, points, hint, make, fails=()):
    return Kind(name, points, hint, make, None if fails is None else frozenset(fails))


KINDS = (
    _kind("p == q, K = 3: all kept", 5, "w_i = 1 gives h_i = 1, also where Z_i = 0 (0/0); the bonus comes from row K",
          _same_rows, {"ratio_without_q", "bonus_wrong_row"}),
    _kind("p(x) = 0 in the middle", 6, "w_i = 0 from a token with p = 0 on: nothing from it on is kept",
          _zero_in_the_middle, {"per_token_test"}),
    _kind("a later token rescues the prefix", 6, "n is the LAST i with eta_i < h_i, not the first failure",
          _rescued, {"first_failure", "ratio_without_q"}),
    _kind("all kept: bonus from row K", 4, "after a full acceptance, sample from target_probs[K]", _all_kept(True),
          {"bonus_wrong_row"}),
    _kind("all kept, no row K", 3, "no bonus token unless target_probs has a row K", _all_kept(False)),
    _kind("K = 0, no rows", 3, "an empty draft and no target rows",
          lambda rng, kind: exact(kind.name, kind.points, [], [], [], hint=kind.hint)),
    _kind("same seed, same result", 6, "draw every uniform from the rng argument",
          samplers.same_seed(FUNC, block_verify), {"module_random"}),
    _kind("shape on a random block", 4, "accepted_tokens is a prefix of the draft; the dict holds plain ints",
          samplers.shape(FUNC, possible)),
    _kind("len(draft_probs) != K raises", 3, "one draft row per drafted token",
          samplers.invalid(FUNC, block_verify, "draft_probs"), {"no_length_check"}),
    _kind("len(target_probs) < K raises", 3, "the target must score every drafted position",
          samplers.invalid(FUNC, block_verify, "target_probs"), {"no_length_check"}),
    _kind("q(x) = 0 raises", 3, "the draft cannot have proposed a token it gives probability 0",
          samplers.invalid(FUNC, block_verify, "q")),
    _kind("accepted length, one doubtful token", 7, "w_i = min(1, w_{i-1} p/q); n is the LAST i with eta_i < h_i",
          _length_one_doubtful, None),
    _kind("accepted length, a fixed draft", 7, "Z_i = sum max(0, w_i p_i - q_i), with the weight",
          _length_deterministic, None),
    _kind("joint law of kept and emitted tokens", 10, "the next token comes from normalize(max(0, w_n p_n - q_n))",
          _joint, None),
)

PUBLIC = (  # the statement's first three examples: outcomes no random number can change
    exact("a b: w_2 = 1 keeps both", 10, [0, 1], [[2 / 3, 1 / 3]] * 2, [[1 / 3, 2 / 3], [1 / 3, 2 / 3], [0.0, 1.0]],
          hidden=False),
    exact("p(x) = 0: nothing kept", 10, [1], [[0.5, 0.5]], [[1.0, 0.0], [0.5, 0.5]], hidden=False),
    exact("K = 0: bonus from row 0", 10, [], [], [[0.0, 0.0, 1.0]], hidden=False),
)

RENAME, REPAIR = samplers.twins(FUNC, block_verify)
EXERCISE = Exercise("ex06", "block_verify", (FUNC,), PUBLIC, KINDS, MISTAKES,
                    rename=RENAME, repair=REPAIR)
