"""Exercise 4's cases: `speculative_sample`, the lossless sampler, graded exactly and statistically (100 points).

Exact cases (69 points): outcomes no random number can change, the same seed
giving the same result, the shape of a random output, ValueError on bad
inputs. "Same seed, same result" calls the sampler in pairs with equal
`random.Random(seed)` but a differently seeded module-level `random` (and
NumPy's legacy global generator): a sampler that draws from anything but
its `rng` argument gives two answers. Statistical cases (31 points, see
`stats.py`): the parent draws each x ~ q itself, sends N = 2000 calls, each
with its own seeded `random.Random`, and counts what comes back: the first
emitted token, the number of accepted drafts, the bonus, and the joint law of
(accepted, emitted) when step 0 is certain, which only the later steps decide
(held to `exact.step_outcomes(p, q, K, "token")`, with rows redrawn until
every catalogued mistake is exactly right there or caught, as in ex06; `rule_law`
enumerates each mistake's law), and the same law on one step whose residual is a
single token (only resampling from p, or accepting with p(x), can miss it: that
sets reusing the acceptance uniform, `reused_uniform`, apart from resampling from p).
Half of each statistical case's calls are replayed in a fresh sandbox and must give the same outputs (`replay.py`).
Every seed comes from the case, so the same file always gets the same score.

    >>> EXERCISE.max_score, sum(c.points for c in EXERCISE.public)
    (100, 30)
    >>> from fractions import Fraction as F
    >>> q, p = [[F(1, 2), F(1, 2)]], [[F(1, 4), F(3, 4)], [F(1), F(0)]]   # x = 0 kept w.p. 1/2, else 1 is emitted
    >>> rule_law(q, p, 1) == step_outcomes(lambda s: p[len(s)], lambda s: q[len(s)], 1, "token")
    True
    >>> rule_law(q, p, 1, correction="p")[(0, (0,))]   # resampled from p: token 0 again, 1/4 of the rejections
    Fraction(1, 16)
    >>> q, p = [[F(1, 2), F(1, 4), F(1, 4)]], [[F(1, 8), F(1, 2), F(3, 8)], [F(1), F(0), F(0)]]   # the statement's
    >>> rule_law(q, p, 1)[(0, (1,))], rule_law(q, p, 1, correction="same_u")[(0, (1,))]   # u reused: 5/9 of 3/8
    (Fraction(1, 4), Fraction(5, 24))
"""

import random

from exercises.common import samplers, stats
from exercises.common.rows import dyadic_row, smooth_row
from exercises.common.samplers import draw as _draw, one_hot as _one_hot
from grader.cases import Exercise, Kind, Mistake
from specdec.exact import step_outcomes
from specdec.residual import argmax, residual_distribution
from specdec.sampling import speculative_sample
from specdec.theory import acceptance_rate

FUNC, N = "speculative_sample", samplers.N
NOT_PREFIX = "accepted tokens that are not a prefix of the draft"  # rule_law's key for outputs every judge refuses


def exact(name, points, tokens, q, p, hidden=True, hint=""):
    """An outcome no random number can change (the reference's, with any seed), or ValueError."""
    return samplers.exact(FUNC, speculative_sample, name, points, tokens, q, p, hidden, hint)


# ---- the catalogue of known mistakes (trusted, parent only) ------------------------------------------
def wrong_sample(tokens, q, p, rng, correction="residual", bonus="sample", source="rng", stop=True,
                 bonus_row="K", accept="ratio"):
    """The sampler with one switch per known mistake (the defaults are right).

    It runs only on the grader's own cases, whose rows are valid: it checks just what the invalid kinds break.
    """
    if len(q) != len(tokens) or len(p) < len(tokens) or any(q[i][x] == 0 for i, x in enumerate(tokens)):
        raise ValueError("invalid draft")
    uniform = random.random if source == "module" else rng.random
    accepted, fix = [], None
    for i, x in enumerate(tokens):
        u = uniform()
        if u < (p[i][x] if accept == "p" else min(1.0, p[i][x] / q[i][x])):
            accepted.append(x)
        elif fix is None:
            row = p[i] if _from_p(correction, i) else residual_distribution(p[i], q[i])
            fix = argmax(row) if correction == "argmax" else _draw(row, u if correction == "same_u" else uniform())
            if stop:
                break
    if fix is None:
        rows = p[len(tokens):len(tokens) + 1] or (p[-1:] if bonus_row == "last" else [])
        fix = (argmax(rows[0]) if bonus == "argmax" else _draw(rows[0], uniform())) if rows else None
    return {"accepted_tokens": accepted, "bonus_token": fix, "acceptance_count": len(accepted)}


def _from_p(correction, step):
    return correction == "p" or (correction == "p_after_step_0" and step > 0)


def rule_law(q, p, k, correction="residual", bonus="sample", source="rng", stop=True, bonus_row="K",
             accept="ratio"):
    """{(n accepted, emitted block): probability} of `wrong_sample` with these switches, each x_i drawn from q[i].

    The library's exact token rule with the same switches (`specdec.exact`, its VARIANTS), on rows given per
    position (p has a row K). `source` changes no law, nor does `bonus_row` where row K exists. Keys are the
    judges' own; an output whose accepted tokens are not a prefix of the draft (sampling on after a rejection)
    counts under NOT_PREFIX.
    """
    law = step_outcomes(lambda s: p[len(s)], lambda s: q[len(s)], k, "token", correction=correction, bonus=bonus,
                        stop=stop, accept=accept)
    out = {}
    for (n, block), prob in law.items():
        key = NOT_PREFIX if n is None else (n, block)
        out[key] = out.get(key, 0) + prob
    return out


def possible(tokens, q, p):
    """{(n kept, emitted token)} the token rule can give on this draft (None: no bonus): `stats.outputs`.

    x_i is kept with probability min(1, p_i(x_i)/q_i(x_i)): possible iff p_i(x_i) > 0, rejected iff
    p_i(x_i) < q_i(x_i), and then replaced by a token with p_i(y) > q_i(y) (p_i's support if there is
    none). Floats compare exactly, so this is exact on the float rows the case sends.

    >>> sorted(possible([0], [[0.5, 0.5]], [[0.25, 0.75]]), key=str)
    [(0, 1), (1, None)]
    """
    out = set()
    for n, x in enumerate(tokens):
        if p[n][x] < q[n][x]:
            excess = [y for y, (a, b) in enumerate(zip(p[n], q[n])) if a > b]
            out.update((n, y) for y in excess or [y for y, a in enumerate(p[n]) if a > 0])
        if p[n][x] <= 0:
            return out
    k = len(tokens)
    out.update(((k, y) for y, a in enumerate(p[k]) if a > 0) if len(p) > k else [(k, None)])
    return out


def _mistake(name, cause, **switch):
    return Mistake(name, cause, {FUNC: lambda t, q, p, rng: wrong_sample(t, q, p, rng, **switch)}), switch


_CATALOGUE = (
    _mistake("resample_from_p", "the correction is drawn from p; draw it from the residual normalize(max(0, p - q))",
             correction="p"),
    _mistake("late_correction_from_p", "after step 0, a rejection's correction is drawn from p; at every step i it "
             "comes from that step's residual normalize(max(0, p_i - q_i))", correction="p_after_step_0"),
    _mistake("argmax_not_sampled", "the correction and the bonus are argmaxes (exercise 1's rule); sample them",
             correction="argmax", bonus="argmax"),
    _mistake("module_random", "the uniforms come from the module-level random (or another generator), not from "
             "the rng argument", source="module"),
    _mistake("no_stop", "sampling goes on after the first rejection; it must stop there", stop=False),
    _mistake("bonus_without_row_k", "a bonus token without row K of target_probs; with only K rows it is None",
             bonus_row="last"),
    _mistake("accept_with_p", "a draft is accepted with probability p(x); it is min(1, p(x)/q(x))", accept="p"),
    _mistake("reused_uniform", "the correction is drawn with the same uniform u that the acceptance test just "
             "rejected (u >= min(1, p(x)/q(x)), so the low end of the residual is never drawn); draw a fresh "
             "u = rng.random() for the correction", correction="same_u"),
)
MISTAKES = tuple(m for m, _ in _CATALOGUE)
RULES = {m.name: s for m, s in _CATALOGUE if "source" not in s}   # the mistakes that change the law


# ---- kinds of hidden case ----------------------------------------------------------------------------
def _kind(name, points, hint, make, fails=()):
    return Kind(name, points, hint, make, None if fails is None else frozenset(fails))


def _same_rows(rng, kind):
    row = smooth_row(rng, 3)
    tokens = [rng.choices(range(3), weights=row)[0] for _ in range(3)]
    return exact(kind.name, kind.points, tokens, [row] * 3, [row] * 3 + [_one_hot(3, rng.randrange(3))], hint=kind.hint)


def _certain_stop(rng, kind):
    """Step 0 and step 2 are certain acceptances, step 1 a certain rejection with a certain correction."""
    x0, x2, a = rng.randrange(2), rng.randrange(2), rng.randint(4, 28) / 32
    q = [_one_hot(2, x0), [a, 1 - a], _one_hot(2, x2)]
    p = [_one_hot(2, x0), [0.0, 1.0], _one_hot(2, x2)] + [_one_hot(2, rng.randrange(2))] * rng.randint(0, 1)
    return exact(kind.name, kind.points, [x0, 0, x2], q, p, hint=kind.hint)


def _no_row_k(rng, kind):
    k = rng.randint(1, 3)
    tokens = [rng.randrange(3) for _ in range(k)]
    rows = [_one_hot(3, x) for x in tokens]
    return exact(kind.name, kind.points, tokens, rows, rows, hint=kind.hint)


def _batch(rng, k, q, p):
    return samplers.batch(rng, k, q, p, N)


def _first_token_law(q, p, **switch):
    """[P(first emitted token = y)] of the rule with these switches, K = 1 (from `rule_law`, as floats)."""
    law = [0.0] * len(p)
    for (_, block), prob in rule_law(samplers.exact_rows([q]), samplers.exact_rows([p, p]), 1, **switch).items():
        law[block[0]] += float(prob)
    return law


def _first_token(rng, kind):
    """K = 1 with rows where the argmax correction, resampling from p and reusing the acceptance uniform for
    the correction are each >= 9 standard errors off."""
    while True:
        q, p = dyadic_row(rng, 4), dyadic_row(rng, 4)
        beta, r = acceptance_rate(p, q), residual_distribution(p, q)
        base = [min(a, b) for a, b in zip(p, q)]
        wrong = ([m + (1 - beta) * (j == argmax(r)) for j, m in enumerate(base)],
                 [m + (1 - beta) * pj for m, pj in zip(base, p)])
        if all(q[j] > 0 for j in range(4)) and min(stats.power(w, p, N) for w in wrong) >= 9 and \
                stats.power(_first_token_law(q, p, correction="same_u"), p, N) >= 9:
            break
    calls = _batch(rng, 1, [q], [p])
    return samplers.statistical(kind, FUNC, calls, stats.first_token_judge(calls, p, 4, possible))


def _mean_accepted(rng, kind):
    """K = 3 equal rows, beta in [0.3, 0.7]: exact mean beta + beta^2 + beta^3, >= 0.4 from accepting with p(x)."""
    mean = lambda b: b + b ** 2 + b ** 3
    while True:
        q, p = dyadic_row(rng, 3), dyadic_row(rng, 3)
        beta, wrong = acceptance_rate(p, q), sum(a * b for a, b in zip(p, q))
        if 0.3 <= beta <= 0.7 and all(v > 0 for v in q) and abs(mean(wrong) - mean(beta)) >= 0.4:
            break
    calls = _batch(rng, 3, [q] * 3, [p] * 3)
    return samplers.statistical(kind, FUNC, calls, stats.mean_accepted_judge(calls, mean(beta), 3, possible))


def _bonus(rng, kind):
    """K = 1 with p_0 == q_0 (always accepted) and a bonus row whose largest entry is at most 0.7."""
    row, bonus = smooth_row(rng, 4), dyadic_row(rng, 4, positive=range(4))
    while max(bonus) > 0.7:
        bonus = dyadic_row(rng, 4, positive=range(4))
    calls = _batch(rng, 1, [row], [row, bonus])
    return samplers.statistical(kind, FUNC, calls, stats.bonus_judge(calls, bonus, 4, possible))


def _later_rows(rng):
    """K = 3: step 0 certain (q_0 = p_0, one-hot on the drafted token), steps 1 and 2 the same doubtful rows
    (every draft entry > 0), a one-hot row K: the law is decided by the steps after the first."""
    x0 = rng.randrange(3)
    q, p = dyadic_row(rng, 3, positive=range(3)), dyadic_row(rng, 3)
    return 3, [_one_hot(3, x0), q, q], [_one_hot(3, x0), p, p, _one_hot(3, rng.randrange(3))]


def _one_excess_rows(rng):
    """K = 1 over 3 or 4 tokens, every draft entry > 0, exactly one token with p(y) > q(y): whatever rejects, the
    correction is that token (reusing the acceptance uniform gives it too, and so does the argmax, whose bonus
    from a one-hot row K is right as well; resampling from p does not)."""
    vocab = rng.randint(3, 4)
    while True:
        q, p = dyadic_row(rng, vocab, positive=range(vocab)), dyadic_row(rng, vocab)
        if sum(a > b for a, b in zip(p, q)) == 1:
            return 1, [q], [p, _one_hot(vocab, rng.randrange(vocab))]   # a one-hot bonus: the argmax's too


def _one_excess(rng, kind):
    """Only resampling from p (and perhaps accepting with p(x)) are caught here: the other corrections are exact."""
    mistakes = {name: (lambda q, p, k, switch=switch: rule_law(q, p, k, **switch)) for name, switch in RULES.items()}
    return samplers.law_case(kind, FUNC, rng, _one_excess_rows, _reference_law, mistakes, {"resample_from_p"},
                             frozenset({"accept_with_p"}), possible=possible)


def _reference_law(q, p, k):
    """The exact law of (n accepted, emitted block), from `theory`'s enumeration (not from `rule_law`)."""
    return step_outcomes(lambda s: p[len(s)], lambda s: q[len(s)], k, "token")


def _later_steps(rng, kind):
    """Three mistakes are caught here with probability >= 1 - 1e-5; the argmax and no early stop either are or
    are exactly right (both also fail cases of their own); a bonus without row K is exactly right (row K exists)."""
    mistakes = {name: (lambda q, p, k, switch=switch: rule_law(q, p, k, **switch)) for name, switch in RULES.items()}
    return samplers.law_case(kind, FUNC, rng, _later_rows, _reference_law, mistakes,
                             {"late_correction_from_p", "resample_from_p", "accept_with_p", "reused_uniform"},
                             frozenset({"argmax_not_sampled", "no_stop"}), possible=possible)


def _invalid(which):
    return samplers.invalid(FUNC, speculative_sample, which)


KINDS = (
    _kind("p == q, K = 3, one-hot bonus", 4, "ratio 1 is always accepted", _same_rows, {"accept_with_p"}),
    _kind("K = 0, no rows", 4, "an empty draft and no target rows",
          lambda rng, kind: exact(kind.name, kind.points, [], [], [], hint=kind.hint)),
    _kind("all accepted, no row K", 4, "no bonus token unless target_probs has a row K", _no_row_k,
          {"bonus_without_row_k"}),
    _kind("stop at a certain rejection", 6, "p(x) = 0 at step 1: reject there and stop", _certain_stop, {"no_stop"}),
    _kind("same seed, same result", 6, "draw every uniform from the rng argument",
          samplers.same_seed(FUNC, speculative_sample), {"module_random"}),
    _kind("shape on a random draft", 4, "accepted_tokens is a prefix of the draft; a rejection brings a replacement",
          samplers.shape(FUNC, possible), None),
    _kind("len(draft_probs) != K raises", 4, "one draft row per drafted token", _invalid("draft_probs")),
    _kind("len(target_probs) < K raises", 4, "the target must score every drafted position", _invalid("target_probs")),
    _kind("q(x) = 0 raises", 3, "the draft cannot have proposed a token it gives probability 0", _invalid("q")),
    _kind("first token ~ p", 7, "the first emitted token must be distributed as p: sample the correction from the "
          "residual, with a fresh uniform", _first_token, None),
    _kind("one token with p > q: the correction", 3, "on a rejection the correction comes from the residual "
          "normalize(max(0, p - q)), not from p: here only one token has p(y) > q(y)", _one_excess, None),
    _kind("mean accepted drafts", 7, "accept x with probability min(1, p(x)/q(x)) at every step", _mean_accepted,
          None),
    _kind("bonus ~ p_K", 6, "after a full acceptance, sample the bonus from row K", _bonus, None),
    _kind("steps after the first: joint law", 8, "every step follows the same rule: accept x_i with probability "
          "min(1, p_i(x_i)/q_i(x_i)); a rejection's correction comes from that step's residual "
          "normalize(max(0, p_i - q_i))", _later_steps, None),
)

PUBLIC = (  # the statement's examples: outcomes no random number can change
    exact("p == q, one-hot bonus", 10, [0], [[0.5, 0.5]], [[0.5, 0.5], [0.0, 1.0]], hidden=False),
    exact("p(x) = 0 always rejects", 10, [0], [[1.0, 0.0]], [[0.0, 1.0]], hidden=False),
    exact("K = 0: bonus from row 0", 10, [], [], [[0.0, 0.0, 1.0]], hidden=False),
)

RENAME, REPAIR = samplers.twins(FUNC, speculative_sample)
EXERCISE = Exercise("ex04", "speculative_sample", (FUNC,), PUBLIC, KINDS, MISTAKES,
                    rename=RENAME, repair=REPAIR)
