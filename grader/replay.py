"""Replay: a sampler's output must be a function of its inputs and its rng, whatever ran before or beside it.

A statistical case (`Case.replay`) sends N seeded calls in one batch and
judges what comes back by counting. Counts alone can be faked: a file that
patches the worker sees the whole batch and can hand out exact quotas without
ever sampling, and a sampler that draws from a generator of its own (the
module-level `random`, NumPy's) gives answers that depend on what ran before.
Neither output is a function of (inputs, seed); a correct sampler's is.

So after the cases, the run goes again in a FRESH sandbox (nothing the first
one held survives): every statistical case is sent again as one request of N
calls, in which half of its calls (at most SIZE; calls that share a seed go
together, as a "same seed" case's pairs), picked at random (a fresh `random.SystemRandom`:
unknown to the file, whatever seed the cases came from), are the calls it first
had, and the others are its other calls with fresh seeds; in a random order,
with another module-level seed than it first had where it had one (the outputs
depend on `rng` alone). Every picked call's output must equal the first one
exactly, or the case fails with MESSAGE (one sentence for every case, so that
the diagnosis can name it).

Subtle (issue 19): a replayed request carries nothing that tells it from a first run's. Once, the replay
sent the picks of all cases pooled in 3 to 8 batches under ids 0, 1, 2 ...: a file read that it was being
replayed, and looked up the answers it had left in the page cache (tests/submissions/ex02/
hostile_pagecache_writer.py and _reader.py). Now each replayed request has its case's shape: N calls of
that case (a first run's calls are i.i.d. draws: tokens from q, uniform 64-bit seeds; so are a replayed
request's, whichever were picked), "globals" where the first run had it, random ids and a random order
(`session._in_secret_order`), and the other cases that answered the first time go along unchanged as
decoys (not judged), so a statistical request's place among the requests is distributed as a first run's.
A quota file still fails: half of each replayed request is new to it, so its ranks and quotas move.

How sure: a file whose answers differ, in the replay, on d of a case's N = 2000 calls passes that case's
replay with probability C(N - d, SIZE) / C(N, SIZE) <= (1 - SIZE / N)^d = 2^-d: below 1e-6 from d = 20.
A quota file changes far more: the red team's (tests/submissions/ex04/hostile_deterministic.py) answers
most of the replayed calls of every case differently. Subtle: this needs seeds the file cannot map back to a
call's place in the batch (`samplers.batch`): with consecutive seeds, seed mod N would BE that place, and
quotas keyed on it would replay perfectly.

In this process (`check()` on a learner's own function, the catalogue of mistakes: no adversary) IN_PROCESS
calls of the case are replayed, shuffled, in one request of their own (`fill=False`): a generator other
than `rng` changes nearly every output.

    >>> requests = [{"id": 0, "func": "f", "calls": [{"args": [i]} for i in range(6)]}]
    >>> outcomes = [{"results": [{"value": 2 * i} for i in range(6)]}]
    >>> planned = plan(requests, outcomes, [True], size=4, fill=False)
    >>> [len(r["calls"]) for r, _ in planned], len({j for _, (i, picks) in planned for _, j in picks})
    ([4], 4)
    >>> replies = [{"results": [{"value": r["calls"][k]["args"][0] * 2} for k in range(4)]} for r, _ in planned]
    >>> attach(outcomes, planned, replies); outcomes[0]["replay"]
    ''
    >>> replies[0]["results"][0]["value"] += 1
    >>> attach(outcomes, planned, replies); outcomes[0]["replay"][:40]
    'same inputs and seed gave different resu'
"""

import random

from .judge import identical

SIZE = 1000  # of a case's N calls (2000 for ex04's and ex06's statistical cases)
IN_PROCESS = 100
MESSAGE = "same inputs and seed gave different results: the sampler must draw only from its rng argument"


def complete(outcome, request):
    """True when the case returned a value for every call (only then is there something to replay)."""
    results = (outcome or {}).get("results")
    return type(results) is list and len(results) == len(request["calls"]) and all("value" in r for r in results)


def plan(requests, outcomes, flags, size=SIZE, rand=None, fill=True, decoys=True):
    """[(request, picks)]: what the replay sandbox is sent (see the module docstring), in the cases' order.

    For a statistical case i: a request of the case's own shape, picks = (i, [(place in it, call index)]) for
    the SIZE calls it first had. `fill`: the other calls come along with fresh seeds (else the request holds
    the picks alone). `decoys`: every other case that answered is sent again as it was (picks None).
    """
    rand = rand or random.SystemRandom()
    out = []
    for i, (request, outcome, flag) in enumerate(zip(requests, outcomes, flags)):
        if flag and complete(outcome, request):
            calls = request["calls"]
            chosen = _choose(calls, size, rand, fill)
            order = [j for j in range(len(calls)) if fill or j in chosen]
            rand.shuffle(order)
            bound, fresh = _seed_bound(calls), {}
            sent = [_strip(calls[j]) if j in chosen else _fresh(calls[j], bound, fresh, rand) for j in order]
            for k, call in enumerate(calls[:len(sent)]):  # "globals" where the first run had it, a new value
                if "globals" in call:
                    sent[k]["globals"] = rand.randrange(2 ** 31)
            picks = [(k, j) for k, j in enumerate(order) if j in chosen]
            out.append((dict(request, calls=sent), (i, picks)))
        elif decoys and type((outcome or {}).get("results")) is list:
            out.append((dict(request), None))
    return out


def _seeds(call):
    return tuple(a["$rng"] for a in call["args"] if type(a) is dict and list(a) == ["$rng"])


def _choose(calls, size, rand, fill):
    """The calls replayed as they were: whole groups of calls that share their seeds (a "same seed" case's pairs),
    half of the groups when the others are refilled with fresh seeds (`fill`), at most `size` calls."""
    groups = {}
    for j, call in enumerate(calls):
        groups.setdefault(_seeds(call) or ("call", j), []).append(j)
    keys = list(groups)
    rand.shuffle(keys)
    want = max(1, len(keys) // 2) if fill else len(keys)
    chosen = set()
    for key in keys[:want]:
        if len(chosen) + len(groups[key]) > size and chosen:
            break
        chosen.update(groups[key])
    return chosen


def _strip(call):
    return {k: v for k, v in call.items() if k != "globals"}


def _seed_bound(calls):
    """The power of two above every rng seed of `calls` (a fresh seed is drawn below it: of the same form)."""
    seeds = [a["$rng"] for c in calls for a in c["args"] if type(a) is dict and type(a.get("$rng")) is int]
    return 2 ** max([1] + [s.bit_length() for s in seeds])


def _fresh(call, bound, fresh, rand):
    """`call` with a fresh seed for each rng it passes (a call of the same kind, never sent before); calls that
    shared a seed share the fresh one (`fresh`: old seed -> new)."""
    def new(seed):
        return fresh.setdefault(seed, rand.randrange(bound))
    args = [{"$rng": new(a["$rng"])} if type(a) is dict and list(a) == ["$rng"] else a for a in call["args"]]
    return dict(_strip(call), args=args)


def _problem(reply, k, original):
    """'' if the k-th call of a replay batch gave `original` again, else why not."""
    if reply is None or "results" not in reply:
        why = (reply or {}).get("failure") or "the grader's worker failed there (" + \
            str((reply or {}).get("worker_error", "no reply")).strip().splitlines()[-1][:200] + ")"
        return f"its calls could not be replayed in a fresh sandbox: {why}"
    results = reply["results"]
    same = k < len(results) and "value" in results[k] and identical(results[k]["value"], original["value"])
    return "" if same else MESSAGE


def attach(outcomes, planned, replies):
    """Set outcomes[i]["replay"] for every replayed case: '' when every replayed output agreed, else why not."""
    for (_, picks), reply in zip(planned, replies):
        if picks is None:
            continue  # a decoy: sent so that the replay looks like a first run, not judged
        i, pairs = picks
        problem = ""
        for k, j in pairs:
            problem = _problem(reply, k, outcomes[i]["results"][j])
            if problem:
                break
        outcomes[i]["replay"] = problem


def fail(outcomes, planned, why):
    """Every replayed case fails its replay with `why` (the replay could not run at all)."""
    for _, picks in planned:
        if picks is not None:
            outcomes[picks[0]]["replay"] = f"its calls could not be replayed in a fresh sandbox: {why}"
