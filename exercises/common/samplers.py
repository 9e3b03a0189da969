"""Case builders shared by the two sampler exercises: ex04 (the token rule) and ex06 (block verification).

Both take (draft_tokens, draft_probs, target_probs, rng) and return the dict of
`verify_speculative_tokens`, so their exact cases, "same seed, same result"
pairs, shape checks, invalid inputs and batches of seeded calls are built the
same way; only the reference function and the rows differ. Every uniform a
case needs comes from the case's own `random.Random` (`rng` below), so the same
seed always builds the same case. A statistical case (`statistical`) sends N
seeded calls and has some of them replayed (`replay.py`); `law_case` holds one
to an exact law, on rows redrawn until every catalogued mistake is either
exactly right there or caught with probability >= 1 - MISS, never in between.

    >>> from specdec.sampling import speculative_sample
    >>> case = exact("speculative_sample", speculative_sample, "p(x) = 0", 5, [0], [[1.0, 0.0]], [[0.0, 1.0]])
    >>> case.expected
    "{'accepted_tokens': [], 'bonus_token': 1, 'acceptance_count': 0}"
    >>> case.shown_input()
    'draft_tokens=[0], draft_probs=[[1.0, 0.0]], target_probs=[[0.0, 1.0]], rng=random.Random(0)'

"""

import hashlib
import random
from fractions import Fraction

from exercises.common import stats
from exercises.common.rows import smooth_row
from exercises.common.twins import checked, perturbed_row, renamed_draft, repaired_draft
from exercises.common.verify_dict import verify_judge, verify_shape
from grader.cases import Case
from grader.judge import raised_text, raises_judge, value_judge

NAMES = ("draft_tokens", "draft_probs", "target_probs", "rng")
N = 2000      # calls per statistical case
MISS = 1e-5   # the most likely a mistake that must fail a law case may pass it (exact binomials)


def one_hot(vocab, x):
    return [1.0 if j == x else 0.0 for j in range(vocab)]


def draw(row, u):
    """Index j with P(j) = row[j] / sum(row): walk the running sum past u * sum(row) (the known mistakes' draw)."""
    cut, total = u * sum(row), 0.0
    for j, w in enumerate(row):
        total += w
        if w > 0 and cut < total:
            return j
    return max(j for j, w in enumerate(row) if w > 0)


def exact(func, reference, name, points, tokens, q, p, hidden=True, hint=""):
    """An outcome no random number can change (the reference's, with any seed), or ValueError."""
    calls = ({"args": [tokens, q, p, {"$rng": 0}]},)
    try:
        expected = reference(tokens, q, p, random.Random(0))
    except ValueError:
        return Case(name, points, func, NAMES, calls, raises_judge("ValueError"), hidden, hint, "raises ValueError")
    return Case(name, points, func, NAMES, calls, verify_judge(expected, calls, NAMES), hidden, hint, repr(expected))


COLLIDE = 0.35  # same_seed: the most often two runs of the reference may agree on the case's draft


def same_seed(func, reference):
    """A kind's make(): 16 pairs of calls with equal rng seeds and different module-level seeds must agree.

    K = 3 smooth rows over 4 tokens, each drafted token the one whose ratio p/q is closest to 1/2 (below 1),
    redrawn until two runs of `reference` with independent seeds agree at most COLLIDE of the time (400
    seeded runs), so that the uniforms matter: with rows where they did not, the pairs would agree whatever
    generator is used, and so would the replay of the case (tests/submissions/ex04/hostile_memo_same_seed.py
    passes it with probability at most about COLLIDE^16 < 1e-7).
    """
    def make(rng, kind):
        while True:
            q, p = [smooth_row(rng, 4) for _ in range(3)], [smooth_row(rng, 4) for _ in range(4)]
            below = [[j for j in range(4) if p[i][j] < q[i][j]] for i in range(3)]
            tokens = [min(below[i], key=lambda j: abs(p[i][j] / q[i][j] - 0.5)) for i in range(3)]
            runs = {}
            for s in range(400):
                out = repr(reference(tokens, q, p, random.Random(rng.random())))
                runs[out] = runs.get(out, 0) + 1
            if sum((c / 400) ** 2 for c in runs.values()) <= COLLIDE:
                return _same_seed_case(func, rng, kind, tokens, q, p)
    return make


def _same_seed_case(func, rng, kind, tokens, q, p, pairs=16):
    seeds = [rng.randrange(2 ** 31) for _ in range(pairs)]
    calls = tuple({"args": [tokens, q, p, {"$rng": s}], "globals": rng.randrange(2 ** 31)} for s in seeds for _ in "ab")

    def judge(outcome):
        if "results" not in outcome:
            return False, outcome.get("failure") or "GRADER BUG, not your mistake: " + outcome["worker_error"]
        for i, result in enumerate(outcome["results"]):
            if "value" not in result:
                return False, f"call {i + 1}: " + raised_text(result.get("raised") or result["unconvertible"])
            problem = verify_shape(result["value"])
            if problem:
                return False, f"call {i + 1}: {problem}"
        values = [r["value"] for r in outcome["results"]]
        if any(values[i] != values[i + 1] for i in range(0, len(values), 2)):
            return False, "two calls with random.Random(seed) of the same seed gave different results"
        if outcome.get("replay") != "":
            return False, outcome.get("replay") or "GRADER BUG, not your mistake: the calls were not replayed"
        return True, ""
    # Replayed too (with other module-level seeds, `replay.plan`): a file that hands the second call of a pair
    # the answer it gave the first (a memo keyed on the rng's state) agreed with itself here while drawing
    # from the module-level random (red team 4, tests/submissions/ex04/hostile_memo_same_seed.py).
    return Case(kind.name, kind.points, func, NAMES, calls, judge, True, kind.hint, echo_args=False, replay=True)


def shape(func, possible=None):
    """A kind's make(): one seeded call on a random draft (K = 3, 5 tokens) must give a well-formed dict
    that the rule can give on that draft (`possible`, see `stats.outputs`)."""
    def make(rng, kind):
        return _shape_case(func, rng, kind, *_random_draft(rng), possible)
    return make


def _random_draft(rng):
    """(tokens, q, p): K = 3 smooth rows over 5 tokens, each token drawn from its q row, and 4 target rows."""
    q, p = [smooth_row(rng, 5) for _ in range(3)], [smooth_row(rng, 5) for _ in range(4)]
    return [rng.choices(range(5), weights=row)[0] for row in q], q, p


def _shape_case(func, rng, kind, tokens, q, p, possible=None):
    """A well-formed dict: a prefix of the draft, a replacement token after a rejection, ids in range."""
    calls = ({"args": [tokens, q, p, {"$rng": rng.randrange(2 ** 31)}]},)

    def check(value):
        problem = stats.outputs({"results": [{"value": value}]}, calls, len(p[0]), False, possible)[1]
        return not problem, problem.replace("call 1 of 1: ", "")
    return Case(kind.name, kind.points, func, NAMES, calls, value_judge(check, calls, NAMES), True, kind.hint)


def batch(rng, k, q, p, n):
    """n calls: x_i ~ q_i drawn here, each call with its own rng seed; the module-level seed on the first.

    Subtle: the seeds are independent 64-bit values (a keyed hash of the call's number), never s, s + 1, ...:
    there, seed mod n would be the call's place in the batch, and quotas keyed on it would replay perfectly.
    """
    draw = random.Random(rng.randrange(2 ** 31))
    key = rng.getrandbits(128).to_bytes(16, "big")
    seeds = [int.from_bytes(hashlib.blake2b(i.to_bytes(4, "big"), key=key, digest_size=8).digest(), "big")
             for i in range(n)]
    calls = [{"args": [[draw.choices(range(len(r)), weights=r)[0] for r in q[:k]], q[:k], p, {"$rng": seed}]}
             for seed in seeds]
    calls[0]["globals"] = rng.randrange(2 ** 31)
    return tuple(calls)


def statistical(kind, func, calls, judge):
    """A statistical case: `judge` counts the outputs of `calls`, some of which are replayed (`replay.py`)."""
    return Case(kind.name, kind.points, func, NAMES, calls, judge, True, kind.hint, echo_args=False, replay=True)


# ---- a case held to an exact law that sets the catalogue's mistakes apart -----------------------------------
def twins(func, reference):
    """(rename, repair) for a sampler exercise's `Exercise` (grader/cases.py's twins): an example with its values
    moved and its token ids renamed, judged as `exact`; a bad input cut to the draft without its fault, kept if
    `reference` takes it.

    The example's outcome is one no random number can change, and so must its twin's be: a row is perturbed on
    its support (`twins.perturbed_row`; a one-hot row stays one), a step where p == q keeps p == q, and the twin
    is kept only if ten seeds give the reference's one outcome (and it is the example's, renamed)."""
    def outcome(tokens, q, p):
        try:
            seen = {repr(reference(tokens, q, p, random.Random(seed))) for seed in range(10)}
        except ValueError:
            return "raises"
        return seen.pop() if len(seen) == 1 else None

    def rename(rng, example):
        tokens, q, p, _ = example.calls[0]["args"]
        for _ in range(200):
            p2 = [perturbed_row(rng, row) for row in p]
            q2 = [list(p2[i]) if row == p[i] else perturbed_row(rng, row) for i, row in enumerate(q)]
            if outcome(tokens, q2, p2) == outcome(tokens, q, p) is not None:
                return exact(func, reference, example.name, 0, *renamed_draft(rng, tokens, q2, p2))
        return exact(func, reference, example.name, 0, *renamed_draft(rng, tokens, q, p))
    return rename, checked(reference, lambda args: repaired_draft(*args))


def exact_rows(rows):
    return [[Fraction(v) for v in row] for row in rows]


def kept(law):
    """{n kept: probability} from {(n kept, emitted block): probability}."""
    out = {}
    for (n, _), prob in law.items():
        out[n] = out.get(n, 0) + prob
    return out


def separates(law, wrong_laws, off, either, n=N):
    """True when every mistake in `off` passes a case held to `law` (n calls) with probability <= MISS, every
    one in `either` does so or has exactly `law`, and every other one has exactly `law`.

    wrong_laws: {mistake name: a function of no argument that gives its law}, computed only when needed.
    """
    tests = stats.law_test(law, n)[0]
    for name, wrong_law in wrong_laws.items():
        wrong = wrong_law()
        if wrong == law and name not in off:
            continue
        if name not in off | either or stats.law_power(wrong, law, n) < 8 or stats.law_miss(wrong, tests, n) > MISS:
            return False
    return True


def law_case(kind, func, rng, rows, reference, mistakes, off, either=frozenset(), joint=True, n=N, possible=None):
    """Redraw (K, q, p) = rows(rng) until the exact law separates the mistakes (`separates`); build the case.

    reference(q, p, K) and every value of `mistakes` ({name: function (q, p, K)}) give the law
    {(n kept, emitted block): probability} on rows of Fractions. joint: the case judges that law;
    else only the law of the number of tokens kept. possible: see `stats.outputs`.
    """
    project = (lambda law: law) if joint else kept
    while True:
        k, q, p = rows(rng)
        fq, fp = exact_rows(q), exact_rows(p)
        law = project(reference(fq, fp, k))
        wrong = {name: (lambda f=f: project(f(fq, fp, k))) for name, f in mistakes.items()}
        if separates(law, wrong, off, either, n):
            break
    calls = batch(rng, k, q, p, n)
    if joint:
        outcome = lambda v: (v["acceptance_count"], tuple(v["accepted_tokens"] + [v["bonus_token"]]))
        describe = lambda o: f"kept {o[0]}, emitted {list(o[1])}"
        judge = stats.law_judge(calls, law, len(p[0]), outcome, "the law of (tokens kept, emitted block)", describe,
                                possible)
    else:
        judge = stats.law_judge(calls, law, len(p[0]), lambda v: v["acceptance_count"],
                                "the law of the number of tokens kept", lambda n: f"keeping {n} tokens", possible)
    return statistical(kind, func, calls, judge)


def invalid(func, reference, which):
    """A kind's make(): the shape case's draw (`shape`), broken in one way (which: the argument at fault, or "q").

    Subtle: a bad-input case is a valid case's twin but for its fault. When they were K = 2 over two
    tokens, a size no valid case had, "raise ValueError at K = 2 over two tokens" took every bad-input
    case's points with no check at all (11/100 on ex04, red team 4); now whatever sets them apart but
    the fault also fires on the shape case, where raising voids them (`verdict.indiscriminate`).
    """
    def make(rng, kind):
        tokens, q, p = _random_draft(rng)
        if which == "draft_probs":
            q = q[:rng.randrange(1, 3)]
        elif which == "target_probs":
            p = p[:rng.randrange(1, 3)]
        else:  # q_i(x_i) = 0: the draft proposed a token it gives probability 0
            i = rng.randrange(3)
            rest = sum(v for y, v in enumerate(q[i]) if y != tokens[i])
            q[i] = [0.0 if y == tokens[i] else v / rest for y, v in enumerate(q[i])]
        return exact(func, reference, kind.name, kind.points, tokens, q, p, hint=kind.hint)
    return make
