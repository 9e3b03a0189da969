"""Replay: a sampler's output must be a function of its inputs and its rng, whatever ran before or beside it.

A statistical case (`Case.replay`) sends N seeded calls in one batch and
judges what comes back by counting. Counts alone can be faked: a file that
patches the worker sees the whole batch and can hand out exact quotas without
ever sampling, and a sampler that draws from a generator of its own (the
module-level `random`, NumPy's) gives answers that depend on what ran before.
Neither output is a function of (inputs, seed); a correct sampler's is.

So after the cases, the parent picks SIZE of each statistical case's calls at
random (a fresh `random.SystemRandom`: unknown to the file, whatever seed the
cases came from), pools the picks of every such case of the run, shuffles them,
cuts them at random points into 3 to 8 batches, and sends them to a FRESH
sandbox (nothing the first one held survives), each with another module-level
seed than it first had, where it had one (the outputs depend on `rng` alone). Every output must equal the
first one exactly, or the case fails with MESSAGE (one sentence for every case,
so that the diagnosis can name it).

How sure: a file whose answers differ, in another batch, on d of a case's
N = 2000 calls passes that case's replay with probability
C(N - d, SIZE) / C(N, SIZE) <= (1 - SIZE / N)^d = 2^-d: below 1e-6 from d = 20.
A quota file changes far more: the red team's (tests/submissions/ex04/
hostile_deterministic.py) answers 72-100% of the replayed calls of every case
differently (d > 1400 per case). Subtle: this needs seeds the file cannot map
back to a call's place in the batch (`samplers.batch`): with consecutive seeds,
seed mod N would BE that place, and quotas keyed on it would replay perfectly.

In this process (`check()` on a learner's own function, the catalogue of mistakes:
no adversary) IN_PROCESS calls of the case are replayed, shuffled, in one batch:
a generator other than `rng` changes nearly every output.

    >>> requests = [{"id": 0, "func": "f", "calls": [{"args": [i]} for i in range(6)]}]
    >>> outcomes = [{"results": [{"value": 2 * i} for i in range(6)]}]
    >>> batches = plan(requests, outcomes, [True], size=4)
    >>> sum(len(picks) for _, picks in batches), sorted(j for _, picks in batches for _, j in picks) != [0, 1, 2, 3]
    (4, True)
    >>> replies = [{"results": [{"value": 2 * j} for _, j in picks]} for _, picks in batches]
    >>> attach(outcomes, batches, replies); outcomes[0]["replay"]
    ''
    >>> replies[0]["results"][0]["value"] += 1
    >>> attach(outcomes, batches, replies); outcomes[0]["replay"][:40]
    'same inputs and seed gave different resu'
"""

import random

from .judge import identical

SIZE = 1000
IN_PROCESS = 100
MESSAGE = "same inputs and seed gave different results: the sampler must draw only from its rng argument"


def complete(outcome, request):
    """True when the case returned a value for every call (only then is there something to replay)."""
    results = (outcome or {}).get("results")
    return type(results) is list and len(results) == len(request["calls"]) and all("value" in r for r in results)


def plan(requests, outcomes, flags, size=SIZE, parts=(3, 8), rand=None):
    """[(request, [(case index, call index) per call])]: the replay batches (see the module docstring)."""
    rand = rand or random.SystemRandom()
    pooled = {}
    for i, (request, outcome, flag) in enumerate(zip(requests, outcomes, flags)):
        if flag and complete(outcome, request):
            n = len(request["calls"])
            pooled.setdefault(request["func"], []).extend((i, j) for j in rand.sample(range(n), min(size, n)))
    batches = []
    for func, picks in pooled.items():
        rand.shuffle(picks)
        cut = min(rand.randint(*parts), len(picks)) - 1
        cuts = [0] + sorted(rand.sample(range(1, len(picks)), cut)) + [len(picks)]
        batches += [(func, picks[a:b]) for a, b in zip(cuts, cuts[1:])]
    rand.shuffle(batches)
    fresh = lambda call: dict(call, globals=rand.randrange(2 ** 31)) if "globals" in call else dict(call)
    return [({"id": k, "func": func, "calls": [fresh(requests[i]["calls"][j]) for i, j in picks], "echo_args": False},
             picks) for k, (func, picks) in enumerate(batches)]


def _problem(reply, k, original):
    """'' if the k-th call of a replay batch gave `original` again, else why not."""
    if reply is None or "results" not in reply:
        why = (reply or {}).get("failure") or "the grader's worker failed there (" + \
            str((reply or {}).get("worker_error", "no reply")).strip().splitlines()[-1][:200] + ")"
        return f"its calls could not be replayed in a fresh sandbox: {why}"
    results = reply["results"]
    same = k < len(results) and "value" in results[k] and identical(results[k]["value"], original["value"])
    return "" if same else MESSAGE


def attach(outcomes, batches, replies):
    """Set outcomes[i]["replay"] for every replayed case: '' when every replayed output agreed, else why not."""
    verdicts = {}
    for (_, picks), reply in zip(batches, replies):
        for k, (i, j) in enumerate(picks):
            if not verdicts.get(i):
                verdicts[i] = _problem(reply, k, outcomes[i]["results"][j])
    for i, problem in verdicts.items():
        outcomes[i]["replay"] = problem


def fail(outcomes, batches, why):
    """Every case in `batches` fails its replay with `why` (the replay could not run at all)."""
    for _, picks in batches:
        for i, _ in picks:
            outcomes[i]["replay"] = f"its calls could not be replayed in a fresh sandbox: {why}"
