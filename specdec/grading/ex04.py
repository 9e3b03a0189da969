"""Cases for exercise 4: the lossless sampler, graded exactly and statistically (100 points).

Exact (structural) cases: keys and types, outcomes no random number can change,
the same seed giving the same result, ValueError on bad lengths. Statistical
cases: with fixed seeds the grader draws x ~ q itself, calls the sampler
N = 4000 times (`child._sample`) and compares with exact values. Tolerance:
every token's count within Z_MAX = 4.5 standard errors of its exact expectation
n t(1 - t) (a correct sampler fails a bin with probability < 7e-6, so < 1e-4 for
a whole case, however it draws its random numbers; the argmax rule or
resampling from p is off by 10 or more standard errors), a token with exact
probability 0 never emitted, and the mean accepted count within 0.08 (five
standard errors of about 0.016).

    >>> sum(c.points for c in EXERCISES["ex04"].cases)
    100
"""

import math
import random

from ..sampling import speculative_sample
from ..theory import acceptance_rate, exact_output_distribution
from .cases import Case, Exercise, random_rows as _rows
from .judge import check_verify_shape, describe, judge_same_twice, judge_verify


# ---- ex04: speculative_sample(draft_tokens, draft_probs, target_probs, rng) ---------------------
SAMPLE_NAMES = ("draft_tokens", "draft_probs", "target_probs", "rng")


def _exact(name, points, tokens, q, p, hidden=True, hint="", raises=""):
    ref = (lambda t, qq, pp, r: speculative_sample(t, qq, pp, random.Random(r["$rng"])))
    return Case(name, points, "speculative_sample", (tokens, q, p, {"$rng": 0}), SAMPLE_NAMES, hidden,
                raises, ref, judge_verify, hint)


def _prefix_judge(tokens):
    def judge(expected, got):
        problem = check_verify_shape(got)
        if problem:
            return False, problem
        if got["accepted_tokens"] != tokens[:len(got["accepted_tokens"])]:
            return False, "accepted_tokens is not a prefix of draft_tokens"
        if got["bonus_token"] is None and len(got["accepted_tokens"]) < len(tokens):
            return False, "a rejection must come with a replacement token in bonus_token"
        return True, ""
    return judge


Z_MAX = 4.5


def _bin_problem(counts, target):
    """The first token whose count is off its exact expectation by more than Z_MAX standard errors."""
    n = sum(counts)
    tv = 0.5 * sum(abs(c / n - t) for c, t in zip(counts, target))
    for token, (c, t) in enumerate(zip(counts, target)):
        if t == 0.0 and c > 0:
            return f"token {token} has probability 0 but was emitted {c} times (total variation {tv:.3f})"
        sd = math.sqrt(n * t * (1.0 - t))
        if sd > 0.0 and abs(c - n * t) > Z_MAX * sd:
            return (f"token {token} was emitted {c} times in {n}, expected {n * t:.0f} +- {sd:.0f} "
                    f"(|z| = {abs(c - n * t) / sd:.1f} > {Z_MAX}; total variation {tv:.3f})")
    return ""


def _stat_judge(expected, got):
    """Frequencies against the exact distributions, bin by bin within Z_MAX; mean accepted within 0.08."""
    if type(got) is not dict or any(type(got.get(k)) is not list for k in ("first", "bonus")):
        return False, f"the sampler's results could not be counted ({describe(got)})"
    for key in ("first", "bonus"):
        counts, target = got[key], expected[key]
        if target is None or sum(counts) == 0:
            continue
        if len(counts) != len(target):
            return False, f"the sampler emitted tokens outside the vocabulary of {len(target)}"
        problem = _bin_problem(counts, target)
        if problem:
            which = "first emitted token" if key == "first" else "bonus token"
            return False, f"the {which} is off the target distribution: {problem}"
    mean = got["accepted_total"] / expected["n"]
    if abs(mean - expected["mean_accepted"]) > 0.08:
        return False, f"mean accepted drafts {mean:.3f} is off the exact value by more than 0.08"
    return True, ""


def _stat_reference(params):
    """Exact answers: first token ~ p_0 (by enumeration), bonus ~ p_K, E[accepted] = beta + ... + beta^K."""
    q, p, k = params["q"], params["p"], params["k"]
    betas = [acceptance_rate(p[i], q[i]) for i in range(k)]
    mean, run = 0.0, 1.0
    for b in betas:
        run *= b
        mean += run
    return {"first": exact_output_distribution(p[0], q[0]), "bonus": p[k] if len(p) > k else None,
            "mean_accepted": mean, "n": params["n"]}


def _stat(name, points, q, p, k, seed, hint):
    params = {"q": q, "p": p, "k": k, "n": 4000, "seed": seed, "draft_seed": seed + 1}
    return Case(name, points, "speculative_sample", hidden=True, reference=_stat_reference, judge=_stat_judge,
                hint=hint, driver="sample", params=params)


_q4, _p4 = [0.5, 0.2, 0.2, 0.1], [0.1, 0.6, 0.3, 0.0]
_rand = _rows(41, 5, 5)
EX04 = (
    _exact("p == q, one-hot bonus", 10, [0], [[0.5, 0.5]], [[0.5, 0.5], [0.0, 1.0]], hidden=False),
    _exact("p(x) = 0 always rejects", 10, [0], [[1.0, 0.0]], [[0.0, 1.0]], hidden=False),
    _exact("K = 0: bonus from row 0", 10, [], [], [[0.0, 0.0, 1.0]], hidden=False),
    _exact("p == q, K = 3, one-hot bonus", 5, [1, 0, 2], [[0.2, 0.5, 0.3]] * 3,
           [[0.2, 0.5, 0.3]] * 3 + [[0.0, 0.0, 1.0]], hint="ratio 1 is always accepted"),
    _exact("K = 0, no rows", 4, [], [], [], hint="an empty draft and no target rows"),
    _exact("all accepted, no row K", 4, [0, 1], [[0.5, 0.5]] * 2, [[0.5, 0.5]] * 2,
           hint="no bonus token unless target_probs has a row K"),
    _exact("stop at a certain rejection", 6, [1, 0, 1], [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]],
           [[0.5, 0.5], [0.0, 1.0], [0.5, 0.5], [0.5, 0.5]], hint="p(x) = 0 at step 1: reject there and stop"),
    Case("same seed, same result", 6, "speculative_sample", hidden=True, reference=lambda params: None,
         judge=judge_same_twice, hint="draw every uniform from the rng argument", driver="same_seed_twice",
         params={"args": [[2, 0, 1], _rand[:3], _rand[1:5]], "seed": 5}),
    Case("shape on a random draft", 5, "speculative_sample", ([2, 0, 1], _rand[:3], _rand[1:5], {"$rng": 3}),
         SAMPLE_NAMES, True, "", lambda *a: None, _prefix_judge([2, 0, 1]),
         "accepted_tokens is a prefix of the draft; a rejection brings a replacement"),
    _exact("len(draft_probs) != K raises", 4, [0, 1], [[0.5, 0.5]], [[0.5, 0.5]] * 3, raises="ValueError",
           hint="one draft row per drafted token"),
    _exact("len(target_probs) < K raises", 4, [0, 1], [[0.5, 0.5]] * 2, [[0.5, 0.5]], raises="ValueError",
           hint="the target must score every drafted position"),
    _exact("q(x) = 0 raises", 3, [1], [[1.0, 0.0]], [[0.5, 0.5]], raises="ValueError",
           hint="the draft cannot have proposed a token it gives probability 0"),
    _stat("first token ~ p", 12, [_q4], [_p4, [0.25] * 4], 1, 11,
          "the first emitted token must be distributed as p: sample the correction from the residual"),
    _stat("mean accepted drafts", 9, [[0.6, 0.3, 0.1]] * 3, [[0.3, 0.3, 0.4]] * 3, 3, 21,
          "accept x with probability min(1, p(x)/q(x)) at every step"),
    _stat("bonus ~ p_K", 8, [[0.3, 0.3, 0.4]], [[0.3, 0.3, 0.4], [0.2, 0.3, 0.5]], 1, 31,
          "after a full acceptance, sample the bonus from row K"),
)


EXERCISES = {"ex04": Exercise("ex04", "speculative_sample", ("speculative_sample",), EX04)}
