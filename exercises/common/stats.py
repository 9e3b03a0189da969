"""Statistical judges for the samplers (exercises 4 and 6), computed in the parent from batches of outputs.

The parent sends N calls (each with its own `random.Random(seed)`), gets N
outputs back, checks each one, counts, and compares with exact values:

- a token's count must lie within Z_MAX = 4.5 standard errors sqrt(N t (1 - t))
  of its exact expectation N t (a correct sampler fails one token with
  probability < 7e-6, a case < 1e-4), and a token of probability 0 must
  never appear;
- the mean number of accepted drafts must lie within MEAN_TOL = 0.13 of its
  exact value (4.7 standard errors at N = 2000: for beta in [0.3, 0.7] the
  count of accepted drafts out of 3 has a standard deviation of at most 1.24);
- a whole law (exercise 6: {outcome: exact probability}, from the exact
  enumeration): outcomes expected fewer than MIN_EXPECTED = 10 times are pooled
  into one bin, an outcome of probability 0 must never appear, and each bin's
  count must lie in an exact binomial acceptance interval whose two tails hold
  at most LAW_ALPHA / (2 bins) each: a correct sampler fails such a case with
  probability at most LAW_ALPHA = 1e-4, computed exactly (`law_test`), however
  small the bins (the normal curve's 4.5 would not promise that for small counts).

Counts are ints and the mean is a ratio of ints, so no statistic can be
NaN or infinite, whatever the submission returns.

    >>> z_problem([1000, 3000], [0.25, 0.75])
    ''
    >>> z_problem([1300, 2700], [0.25, 0.75])[:36]
    'token 0 was emitted 1300 times in 40'
    >>> tests, false_alarm = law_test({"a": 0.5, "b": 0.49, "c": 0.01, "d": 0.0}, 2000)
    >>> [(t[0], t[3], t[4]) for t in tests], false_alarm < 1e-4
    ([("'a'", 907, 1093), ("'b'", 887, 1073), ("'c'", 5, 41)], True)
    >>> law_problem({"a": 1000, "b": 980, "c": 20}, tests, 2000), law_problem({"a": 1000, "d": 1}, tests, 2000)[:34]
    ('', "'d' has probability 0 but appeared")
"""

import math

from exercises.common.verify_dict import verify_shape
from grader.judge import raised_text

Z_MAX = 4.5
MEAN_TOL = 0.13
MIN_EXPECTED = 10
LAW_ALPHA = 1e-4


def z_problem(counts, target):
    """The first token whose count is off its exact expectation by more than Z_MAX standard errors, or ''."""
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


def power(wrong, target, n):
    """The largest |z| by which a sampler with output distribution `wrong` misses `target` in n draws."""
    worst = 0.0
    for w, t in zip(wrong, target):
        if t in (0.0, 1.0):
            worst = max(worst, math.inf if abs(w - t) > 1e-12 else 0.0)
        else:
            worst = max(worst, abs(w - t) * math.sqrt(n / (t * (1.0 - t))))
    return worst


def outputs(outcome, calls, vocab, replayed=True, possible=None):
    """(list of output dicts, '') when every call returned a well-formed output that its replay gave again
    (`replay.py`; `replayed=False`: a case that is not replayed), else (None, why not).

    possible(draft_tokens, draft_probs, target_probs): the set of (tokens kept, emitted token) the rule
    can give on that call, exactly (a missing bonus is None). Every output must be in it (checked after
    the replay: a file whose outputs are not a function of its inputs is told that first).
    Subtle: counts alone judge a batch, not each call: a file that never verifies and emits a sample of
    p's first row gets the first token's law exactly right (tests/submissions/ex04/hostile_never_verifies.py).
    """
    if "results" not in outcome:
        return None, outcome.get("failure") or "GRADER BUG, not your mistake: " + outcome.get("worker_error", "")
    got = []
    for i, (result, call) in enumerate(zip(outcome["results"], calls)):
        where = f"call {i + 1} of {len(calls)}"
        if "raised" in result:
            return None, f"{where} {raised_text(result['raised'])}"
        if "unconvertible" in result:
            return None, f"{where} returned a value the grader could not read"
        value = result["value"]
        problem = verify_shape(value)
        k = len(call["args"][0])
        if not problem and value["accepted_tokens"] != call["args"][0][:len(value["accepted_tokens"])]:
            problem = "accepted_tokens is not a prefix of draft_tokens"
        if not problem and value["bonus_token"] is None and value["acceptance_count"] < k:
            problem = "a rejection must come with a replacement token in bonus_token"
        if not problem and any(not 0 <= t < vocab for t in value["accepted_tokens"] + [value["bonus_token"] or 0]):
            problem = f"a token id outside the vocabulary [0, {vocab})"
        if problem:
            return None, f"{where}: {problem}"
        got.append(value)
    if replayed and outcome.get("replay") != "":
        return None, outcome.get("replay") or "GRADER BUG, not your mistake: the calls were not replayed"
    seen = {}  # a batch's calls share their rows (a few drafts, many seeds): each set computed once
    for i, (value, call) in enumerate(zip(got, calls) if possible else ()):
        key = repr(call["args"][:3])
        if key not in seen:
            seen[key] = possible(*call["args"][:3])
        if (value["acceptance_count"], value["bonus_token"]) not in seen[key]:
            return None, (f"call {i + 1} of {len(calls)}: keeping {value['acceptance_count']} tokens, then emitting "
                          f"{value['bonus_token']}, has probability 0 for this call's inputs")
    return got, ""


def _counting_judge(calls, target, vocab, count, what, possible):
    """A judge that counts one token per output (`count(value, call)` -> token or None) against `target`."""
    def judge(outcome):
        got, problem = outputs(outcome, calls, vocab, possible=possible)
        if problem:
            return False, problem
        counts = [0] * vocab
        for value, call in zip(got, calls):
            token = count(value, call)
            if isinstance(token, str):
                return False, token
            if token is not None:
                counts[token] += 1
        if sum(counts) < len(calls) // 2:
            return False, f"only {sum(counts)} of {len(calls)} calls gave {what} (about all should)"
        problem = z_problem(counts, target)
        return (False, f"{what} is off its exact distribution: {problem}") if problem else (True, "")
    return judge


def first_token_judge(calls, target, vocab, possible=None):
    """The first emitted token (an accepted draft or the correction) must be distributed as `target`."""
    first = lambda value, call: (value["accepted_tokens"] or [value["bonus_token"]])[0]
    return _counting_judge(calls, target, vocab, first, "the first emitted token", possible)


def bonus_judge(calls, target, vocab, possible=None):
    """After a full acceptance, the bonus token must be distributed as `target` (row K)."""
    def bonus(value, call):
        if value["acceptance_count"] < len(call["args"][0]):
            return None
        return value["bonus_token"] if value["bonus_token"] is not None else \
            "all drafts accepted and row K exists, but bonus_token is None"
    return _counting_judge(calls, target, vocab, bonus, "the bonus token after a full acceptance", possible)


def mean_accepted_judge(calls, exact_mean, vocab, possible=None):
    """The mean number of accepted drafts must be within MEAN_TOL of `exact_mean`."""
    def judge(outcome):
        got, problem = outputs(outcome, calls, vocab, possible=possible)
        if problem:
            return False, problem
        mean = sum(v["acceptance_count"] for v in got) / len(got)
        if abs(mean - exact_mean) > MEAN_TOL:
            return False, (f"the mean number of accepted drafts is {mean:.3f}, "
                           f"off the exact value by more than {MEAN_TOL}")
        return True, ""
    return judge



# ---- a whole law: {outcome: exact probability} ------------------------------------------------------------
def law_bins(law, n):
    """[(label, outcomes, probability)]: each outcome expected >= MIN_EXPECTED times alone, the others pooled."""
    alone = sorted((k for k, t in law.items() if t > 0 and n * t >= MIN_EXPECTED), key=repr)
    rare = sorted((k for k, t in law.items() if t > 0 and n * t < MIN_EXPECTED), key=repr)
    out = [(repr(k), [k], float(law[k])) for k in alone]
    if rare:
        out.append((f"the {len(rare)} outcomes expected fewer than {MIN_EXPECTED} times each, together", rare,
                    float(sum(law[k] for k in rare))))
    return out


def _pmf(n, t):
    """(first k, [P(X = k) ...]) for X ~ Binomial(n, t) on mean +- 12 sd (+ 6): the rest is below 1e-20."""
    if t <= 0.0 or t >= 1.0:
        return (0 if t <= 0.0 else n), [1.0]
    sd = math.sqrt(n * t * (1.0 - t))
    low, high = max(0, math.floor(n * t - 12 * sd - 6)), min(n, math.ceil(n * t + 12 * sd + 6))
    log_t, log_s, log_n = math.log(t), math.log1p(-t), math.lgamma(n + 1)
    return low, [math.exp(log_n - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_t + (n - k) * log_s)
                 for k in range(low, high + 1)]


def law_test(law, n, alpha=LAW_ALPHA):
    """([(label, outcomes, t, lo, hi)], false alarm): exact binomial acceptance intervals, one per bin.

    Each tail of each bin gets alpha / (2 bins) at most (Bonferroni), so a correct sampler fails
    the whole test with probability at most alpha; the second value is that probability's exact
    bound, the sum of the tails the intervals actually leave out.
    """
    bins, tests, false_alarm = law_bins(law, n), [], 0.0
    a = alpha / (2 * max(1, len(bins)))
    for label, outcomes, t in bins:
        first, pmf = _pmf(n, t)
        below = above = 0.0
        lo, hi = first, first + len(pmf) - 1
        for k, v in enumerate(pmf):          # lo: P(X < lo) <= a
            if below + v > a:
                lo = first + k
                break
            below += v
        for k, v in enumerate(reversed(pmf)):  # hi: P(X > hi) <= a
            if above + v > a:
                hi = first + len(pmf) - 1 - k
                break
            above += v
        tests.append((label, outcomes, t, lo, hi))
        false_alarm += below + above
    return tests, false_alarm


def law_problem(counts, tests, n, describe=repr):
    """The first outcome of probability 0 seen, or bin outside its interval (`law_test`), or ''."""
    allowed = {k for _, outcomes, _, _, _ in tests for k in outcomes}
    for outcome, c in sorted(counts.items(), key=lambda kc: repr(kc[0])):
        if c and outcome not in allowed:
            return f"{describe(outcome)} has probability 0 but appeared {c} times in {n}"
    for label, outcomes, t, lo, hi in tests:
        c = sum(counts.get(k, 0) for k in outcomes)
        if not lo <= c <= hi:
            label = describe(outcomes[0]) if len(outcomes) == 1 else label
            return (f"{label} appeared {c} times in {n}; a correct function gives between {lo} and {hi} "
                    f"(expected {n * t:.0f})")
    return ""


def law_power(wrong, law, n):
    """The largest |z| by which a sampler with law `wrong` misses `law` on its bins in n calls (a quick screen).

    Mass on outcomes of probability 0 counts as infinite once n times it is at least 12.
    """
    leak = sum(float(v) for k, v in wrong.items() if v and not law.get(k, 0))
    worst = math.inf if n * leak >= 12 else 0.0
    for _, outcomes, t in law_bins(law, n):
        w = float(sum(wrong.get(k, 0) for k in outcomes))
        if 0.0 < t < 1.0:
            worst = max(worst, abs(w - t) * math.sqrt(n / (t * (1.0 - t))))
    return worst


def law_miss(wrong, tests, n):
    """An upper bound on the chance that a sampler with law `wrong` passes `tests` in n calls (exact binomials)."""
    allowed = {k for _, outcomes, _, _, _ in tests for k in outcomes}
    leak = float(sum(v for k, v in wrong.items() if k not in allowed))
    miss = (1.0 - leak) ** n
    for _, outcomes, _, lo, hi in tests:
        first, pmf = _pmf(n, float(sum(wrong.get(k, 0) for k in outcomes)))
        miss = min(miss, sum(v for k, v in enumerate(pmf, start=first) if lo <= k <= hi))
    return miss


def law_judge(calls, law, vocab, outcome, what, describe=repr, possible=None):
    """A judge that maps each output to an outcome (`outcome(value)`) and holds the counts to `law_test`."""
    tests = law_test(law, len(calls))[0]

    def judge(reply):
        got, problem = outputs(reply, calls, vocab, possible=possible)
        if problem:
            return False, problem
        counts = {}
        for value in got:
            key = outcome(value)
            counts[key] = counts.get(key, 0) + 1
        problem = law_problem(counts, tests, len(got), describe)
        return (False, f"{what} is off its exact law: {problem}") if problem else (True, "")
    return judge
