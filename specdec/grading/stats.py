"""Statistical judges for a sampler (exercise 4), computed in the parent from batches of outputs.

The parent sends N calls (each with its own `random.Random(seed)`), gets N
outputs back, checks each one, counts, and compares with exact values:

- a token's count must lie within Z_MAX = 4.5 standard errors sqrt(N t (1 - t))
  of its exact expectation N t (a correct sampler fails one token with
  probability < 7e-6, a case < 1e-4), and a token of probability 0 must
  never appear;
- the mean number of accepted drafts must lie within MEAN_TOL = 0.13 of its
  exact value (4.7 standard errors at N = 2000: for beta in [0.3, 0.7] the
  count of accepted drafts out of 3 has a standard deviation of at most 1.24).

Counts are ints and the mean is a ratio of ints, so no statistic can be
NaN or infinite, whatever the submission returns.

    >>> z_problem([1000, 3000], [0.25, 0.75])
    ''
    >>> z_problem([1300, 2700], [0.25, 0.75])[:36]
    'token 0 was emitted 1300 times in 40'
"""

import math

from .judge import raised_text, verify_shape

Z_MAX = 4.5
MEAN_TOL = 0.13


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


def outputs(outcome, calls, vocab):
    """(list of output dicts, '') when every call returned a well-formed output, else (None, why not)."""
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
    return got, ""


def _counting_judge(calls, target, vocab, count, what):
    """A judge that counts one token per output (`count(value, call)` -> token or None) against `target`."""
    def judge(outcome):
        got, problem = outputs(outcome, calls, vocab)
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


def first_token_judge(calls, target, vocab):
    """The first emitted token (an accepted draft or the correction) must be distributed as `target`."""
    first = lambda value, call: (value["accepted_tokens"] or [value["bonus_token"]])[0]
    return _counting_judge(calls, target, vocab, first, "the first emitted token")


def bonus_judge(calls, target, vocab):
    """After a full acceptance, the bonus token must be distributed as `target` (row K)."""
    def bonus(value, call):
        if value["acceptance_count"] < len(call["args"][0]):
            return None
        return value["bonus_token"] if value["bonus_token"] is not None else \
            "all drafts accepted and row K exists, but bonus_token is None"
    return _counting_judge(calls, target, vocab, bonus, "the bonus token after a full acceptance")


def mean_accepted_judge(calls, exact_mean, vocab):
    """The mean number of accepted drafts must be within MEAN_TOL of `exact_mean`."""
    def judge(outcome):
        got, problem = outputs(outcome, calls, vocab)
        if problem:
            return False, problem
        mean = sum(v["acceptance_count"] for v in got) / len(got)
        if abs(mean - exact_mean) > MEAN_TOL:
            return False, f"the mean number of accepted drafts is {mean:.3f}, off the exact value by more than {MEAN_TOL}"
        return True, ""
    return judge
