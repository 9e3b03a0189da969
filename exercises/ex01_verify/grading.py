"""Exercise 1's cases: `verify_speculative_tokens`, the graded problem (100 points, +10 for plain Python).

Public: the problem's three examples, verbatim (25 points). Hidden (75): one
kind per edge the rule decides and per decision the statement's table makes (an
empty residual falls back to p; q(x) = 0 raises; a row that is not a distribution
raises ValueError naming it, which `raises_judge(names=...)` checks), each generated
from the seed so that exactly the catalogued mistakes it names fail it (see
`cases.generate`), plus random drafts and a 5000-token vocabulary. Their points
are the statement's table (tests/exercises/test_stated_decisions.py). Rows of the edge kinds are multiples of
1/32, exact in binary floating point, so `u == p(x)/q(x)` is a true tie
however a submission computes it (`u <= p/q` or `u * q <= p`).

The catalogue of mistakes (`MISTAKES`) is one small wrong implementation with
a switch per mistake; it runs in the parent only, for the diagnosis.

    >>> EXERCISE.max_score, sum(c.points for c in EXERCISE.public)
    (100, 25)
"""

import copy
import math

from exercises.common.rows import dyadic_row, smooth_row
from exercises.common.twins import (checked, normalised, perturbed_row, renamed_draft, repaired_draft, same_path,
                                    top_gap)
from exercises.common.verify_dict import verify_judge
from grader.cases import Case, Exercise, Kind, Mistake
from grader.judge import raises_judge, row_names
from specdec.residual import residual_distribution
from specdec.verify import verify_speculative_tokens

FUNC = "verify_speculative_tokens"
NAMES = ("draft_tokens", "draft_probs", "target_probs", "random_samples")


def case(name, points, args, hidden=True, hint="", row=None):
    """A case whose expected value is the reference's answer (or ValueError, if the reference raises).

    `row`: the one row at fault ("target_probs[1]"), which the ValueError's message must name (and no other).
    """
    calls = ({"args": list(args)},)
    try:
        expected = verify_speculative_tokens(*copy.deepcopy(args))
    except ValueError as exc:
        assert row is None or row_names(str(exc)) == [row], (row, str(exc))   # the reference names it too
        judge = raises_judge("ValueError", names=None if row is None else [row])
        return Case(name, points, FUNC, NAMES, calls, judge, hidden, hint, "raises ValueError")
    return Case(name, points, FUNC, NAMES, calls, verify_judge(expected, calls, NAMES), hidden, hint, repr(expected))


# ---- the catalogue of known mistakes (trusted, parent only) ------------------------------------------
def _argmax(row, ties="low"):
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best] or (ties == "high" and row[j] == row[best]):
            best = j
    return best


def _residual(p, q, fallback=True):
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    return [e / mass for e in excess] if mass > 0 or not fallback else list(p)   # no fallback: 0/0


def _check_rows(q, p, rows):
    """ValueError naming the first row that is not a distribution; rows: "all" checked, "sums" only the sums,
    "signs" only that every entry is finite and >= 0, "none" nothing."""
    for name, table in (("target_probs", p), ("draft_probs", q)):
        for i, row in enumerate(table):
            total = math.fsum(row)   # nan if an entry is (min and max need not see it)
            signs = rows in ("all", "signs") and not (min(row) >= 0.0 and max(row) < math.inf and total == total)
            sums = rows in ("all", "sums") and abs(total - 1.0) > 1e-4
            if signs or sums:
                raise ValueError(f"{name}[{i}] is not a distribution")


def wrong_verify(tokens, q, p, u, strict=False, stop=True, correction="residual", ties="low",
                 bonus_row="K", empty_draft=True, lengths=True, swap=False, rows="all", zero_q=True,
                 fallback=True, token_ids=True):
    """The rule with one switch per known mistake (the defaults are the right rule)."""
    k = len(tokens)
    if lengths and (len(q) != k or len(u) != k or len(p) < k):
        raise ValueError("mismatched lengths")
    _check_rows(q, p, rows)
    if token_ids and any(not 0 <= x < len(row) for x, row in zip(tokens, q)):
        raise ValueError("a drafted token id outside the vocabulary")
    if zero_q and any(row[x] == 0 for x, row in zip(tokens, q)):
        raise ValueError("the draft cannot have proposed a token it gives probability 0")
    if not empty_draft and k == 0:
        return {"accepted_tokens": [], "bonus_token": None, "acceptance_count": 0}
    accepted, fix = [], None
    for i, x in enumerate(tokens):
        top, bottom = (q[i], p[i]) if swap else (p[i], q[i])
        ratio = min(1.0, top[x] / bottom[x])
        if u[i] < ratio if strict else u[i] <= ratio:
            accepted.append(x)
        elif fix is None:
            fix = _argmax(top if correction == "p" else _residual(top, bottom, fallback), ties)
            if stop:
                break
    if fix is None and bonus_row != "none":
        rows = p[k:k + 1] or (p[-1:] if bonus_row == "last" else [])
        fix = _argmax(rows[0], ties) if rows else None
    return {"accepted_tokens": accepted, "bonus_token": fix, "acceptance_count": len(accepted)}


def _mistake(name, cause, **switch):
    return Mistake(name, cause, {FUNC: lambda t, q, p, u: wrong_verify(t, q, p, u, **switch)})


MISTAKES = (
    _mistake("no_stop", "verification goes on after the first rejection; it must stop there", stop=False),
    _mistake("strict_less", "the test is u < min(1, p/q); the rule accepts when u <= min(1, p/q)", strict=True),
    _mistake("target_argmax", "on a rejection you take the argmax of p; take the argmax of the residual "
             "normalize(max(0, p - q))", correction="p"),
    _mistake("tie_high", "argmax ties go to the higher token index; they go to the lower one", ties="high"),
    _mistake("bonus_without_row_k", "a bonus token without row K of target_probs; with only K rows the bonus "
             "is None", bonus_row="last"),
    _mistake("no_bonus", "no bonus token when every drafted token is accepted; with a row K of target_probs, the "
             "bonus is argmax target_probs[K]", bonus_row="none"),
    _mistake("ignore_k0", "an empty draft (K = 0) returns no bonus; with a row 0 the bonus is its argmax",
             empty_draft=False),
    _mistake("no_length_check", "mismatched lengths do not raise ValueError", lengths=False),
    _mistake("swap_pq", "p and q are swapped: the ratio is p(x)/q(x), target over draft (Example 2 is the "
             "classic trap)", swap=True),
    _mistake("no_empty_fallback", "a residual max(0, p - q) with no mass is divided by its zero sum; the course "
             "decides that it falls back to p (the bonus is then argmax p)", fallback=False),
    _mistake("no_zero_q_check", "a drafted token with q(x) = 0 does not raise ValueError (p(x)/q(x) divides by "
             "zero): a draft cannot propose a token it gives probability 0", zero_q=False),
    _mistake("no_row_check", "rows that are not distributions (logits, negative entries, rows that do not sum to "
             "1) are used as they are; each must raise ValueError naming the row", rows="none"),
    _mistake("row_sum_only", "a row with a negative entry that still sums to 1 is accepted; every entry must be "
             "finite and >= 0 as well", rows="sums"),
    _mistake("row_signs_only", "a row of non-negative weights that does not sum to 1 is accepted; it must sum to "
             "1 within 1e-4", rows="signs"),
    _mistake("no_token_check", "a drafted token id outside the vocabulary (negative, or not below the row's length) "
             "is used as it is; it must raise ValueError", token_ids=False),
)


# ---- kinds of hidden case ----------------------------------------------------------------------------
def _draft(rng, k, vocab, rows, u=None):
    """K tokens drawn from dyadic draft rows, `rows` dyadic target rows, uniforms in steps of 1/64."""
    q = [dyadic_row(rng, vocab) for _ in range(k)]
    p = [dyadic_row(rng, vocab) for _ in range(rows)]
    tokens = [rng.choice([j for j in range(vocab) if q[i][j] > 0]) for i in range(k)]
    u = u if u is not None else [rng.randrange(64) / 64 for _ in range(k)]
    return tokens, q, p, u


def _kind(name, points, hint, make, fails=()):
    fails = None if fails is None else frozenset(fails)
    return Kind(name, points, hint, lambda rng, kind: case(kind.name, kind.points, make(rng), hint=kind.hint), fails)


def _boundary(rng):
    """u_i == p_i(x)/q_i(x) at one step, with q_i(x) = 1/4 or 1/2 so that the ratio is exact."""
    tokens, q, p, u = _draft(rng, rng.randint(1, 3), rng.randint(2, 4), 3)
    i = rng.randrange(len(tokens))
    x, share = tokens[i], rng.choice([8, 16])
    rest = iter(dyadic_row(rng, len(q[i]) - 1, 32 - share))
    q[i] = [share / 32 if j == x else next(rest) for j in range(len(q[i]))]
    u[i] = p[i][x] / q[i][x]  # p(x) * 4 or p(x) * 2: u * q(x) == p(x) exactly as well
    return tokens, q, p, u


def _zero_p(u):
    """K = 1 and p(x) = 0 for the drafted x, with uniform `u`."""
    def make(rng):
        vocab = rng.randint(2, 4)
        q = [dyadic_row(rng, vocab)]
        x = rng.choice([j for j in range(vocab) if q[0][j] > 0])
        rest = iter(dyadic_row(rng, vocab - 1))
        return [x], q, [[0.0 if j == x else next(rest) for j in range(vocab)], dyadic_row(rng, vocab)], [u]
    return make


def _small_u(k, vocab, rows):
    """All accepted by every reading of the rule: u in (0, 1/8)."""
    return lambda rng: _draft(rng, k, vocab, rows(k), [rng.randrange(1, 8) / 64 for _ in range(k)])


def _mismatch(which):
    """2 to 4 drafted tokens over 2 to 4, one argument of the wrong length (Example 3's kind of input).

    Sizes vary as the valid cases' do: only the lengths tell these cases apart (see `samplers.invalid`).
    """
    def make(rng):
        k = rng.randint(2, 4)
        tokens, q, p, u = _draft(rng, k, rng.randint(2, 4), k + rng.randint(0, 1))
        if which == "draft_probs":
            q = q[:rng.randrange(1, k)]
        elif which == "random_samples":
            u = u + [rng.randrange(64) / 64] if rng.random() < 0.5 else u[:rng.randrange(1, k)]
        else:
            p = p[:rng.randrange(1, k)]
        return tokens, q, p, u
    return make


def _empty_residual(rng):
    """A rejection at step i where p <= q everywhere (p = q less at most 9e-5 in all: within the sum tolerance),
    earlier steps p == q (accepted by any reading). The rejected row q has two tied largest entries a < b and p
    keeps b above a, so argmax p = b: falling back to q, to a uniform row or to the argmax of the zero residual
    (token 0) all differ from falling back to p."""
    k, vocab = rng.randint(1, 3), rng.randint(3, 5)
    tokens, q, p, u = _draft(rng, k, vocab, k + rng.randint(0, 1))
    i = rng.randrange(k)
    for j in range(i):
        p[j] = list(q[j])
    a, b = sorted(rng.sample(range(vocab), 2))
    rest = iter(dyadic_row(rng, vocab - 2, 8))    # every other entry <= 8/32 < 12/32
    q[i] = [12 / 32 if j in (a, b) else next(rest) for j in range(vocab)]
    p[i] = [v - (1e-5 if j == b else 2e-5) if v else 0.0 for j, v in enumerate(q[i])]
    tokens[i] = rng.choice([j for j in range(vocab) if q[i][j] > 0])
    u[i] = 1 - rng.randint(1, 15) / 2 ** 20           # above every ratio p(x)/q(x) <= 1 - 2.6e-5
    return tokens, q, p, u


def _zero_q(rng):
    """A drafted token with q(x) = 0 at step i >= 1, earlier steps p == q (accepted: lazy and eager checks agree).

    Not at step 0: the case's twin (the draft cut before the fault) is then never the empty draft, whose own
    kinds are another edge."""
    k, vocab = rng.randint(2, 3), rng.randint(2, 4)
    tokens, q, p, u = _draft(rng, k, vocab, k + rng.randint(0, 1))
    i = rng.randrange(1, k)
    for j in range(i):
        p[j] = list(q[j])
    x, rest = rng.randrange(vocab), iter(dyadic_row(rng, vocab - 1))
    q[i] = [0.0 if j == x else next(rest) for j in range(vocab)]
    tokens[i] = x
    return tokens, q, p, u


def _bad_token(rng):
    """A drafted token id outside [0, V) at step i >= 1 (negative, or V and above), earlier steps p == q (accepted:
    lazy and eager checks agree). Negative: in Python, q[i][-1] reads a row without complaint."""
    k, vocab = rng.randint(2, 3), rng.randint(2, 4)
    tokens, q, p, u = _draft(rng, k, vocab, k + rng.randint(0, 1))
    i = rng.randrange(1, k)
    for j in range(i):
        p[j] = list(q[j])
    tokens[i] = rng.choice([vocab + rng.randrange(3), -rng.randint(1, vocab)])
    return tokens, q, p, u


def _bad_row(fault):
    """A valid draft's twin but for one row that is not a distribution; (args, the row's name).

    A faulty draft row keeps its drafted token's entry > 0, so that the case's twin (the row normalised) is the
    whole draft, never one cut short."""
    def make(rng):
        k, vocab = rng.randint(1, 3), rng.randint(2, 4)
        tokens, q, p, u = _draft(rng, k, vocab, k + rng.randint(0, 1))
        which = rng.choice(["draft_probs", "target_probs"])
        table = q if which == "draft_probs" else p
        i = rng.randrange(len(table))
        keep = [tokens[i]] if which == "draft_probs" else []    # entries that stay > 0
        if fault == "logits":       # scores: some negative, summing to anything but 1
            row = [0.0]
            while min(row) >= 0 or abs(sum(row) - 1) < 0.05:
                row = [round(rng.uniform(0.5, 4) if j in keep else rng.uniform(-4, 4), 2) for j in range(vocab)]
        elif fault == "weights":    # non-negative, summing to 1/2, 3/2 or 2
            row = dyadic_row(rng, vocab, rng.choice([16, 48, 64]), positive=keep)
        else:                       # one entry negative, the row still summing to 1
            row = dyadic_row(rng, vocab, positive=keep)
            j, m = rng.choice([y for y in range(vocab) if y not in keep]), rng.randint(1, 8)
            row[(j + 1) % vocab] += row[j] + m / 32
            row[j] = -m / 32
        table[i] = row
        return (tokens, q, p, u), f"{which}[{i}]"
    return make


def _row_kind(name, points, hint, fault, fails):
    make = _bad_row(fault)

    def build(rng, kind):
        args, row = make(rng)
        return case(kind.name, kind.points, args, hint=kind.hint, row=row)
    return Kind(name, points, hint, build, frozenset(fails))


def _smooth(k, vocab, rows):
    def make(rng):
        q = [smooth_row(rng, vocab) for _ in range(k)]
        p = [smooth_row(rng, vocab) for _ in range(rows(k))]
        tokens = [rng.choices(range(vocab), weights=row)[0] for row in q]
        return tokens, q, p, [rng.random() for _ in range(k)]
    return make


RULE = "accept while u_i <= min(1, p_i(x)/q_i(x))"
KINDS = (
    _kind("reject at the first step", 3, "a rejection at step 0: nothing accepted, the correction is the bonus",
          lambda rng: _draft(rng, 2, 3, 2, [rng.randrange(40, 64) / 64 for _ in range(2)]), {"swap_pq"}),
    _kind("stop at the first rejection", 5, "after a rejection, later draft tokens are not verified",
          lambda rng: _draft(rng, 3, rng.randint(3, 4), 3 + rng.randint(0, 1)), {"no_stop", "swap_pq"}),
    _kind("u == p/q is accepted", 4, f"u exactly equal to the ratio: {RULE}, with <=", _boundary,
          {"strict_less", "no_bonus"}),
    _kind("u = 0 accepts even p(x) = 0", 3, "the rule is u <= min(1, p/q): 0 <= 0 holds", _zero_p(0.0),
          {"strict_less", "swap_pq", "no_bonus"}),
    _kind("p(x) = 0 rejects", 3, "a token the target gives probability 0 is rejected for any u > 0",
          _zero_p(0.5), {"swap_pq"}),
    _kind("ratio above 1 always accepts", 3, "min(1, p/q) is 1 when p(x) > q(x)",
          lambda rng: _draft(rng, rng.randint(1, 2), 3, 3, [rng.randrange(48, 64) / 64 for _ in range(2)]),
          {"swap_pq"}),
    _kind("correction: residual, not target", 5, "on rejection take the argmax of normalize(max(0, p - q))",
          lambda rng: _draft(rng, 1, rng.randint(3, 5), 1), {"target_argmax", "swap_pq"}),
    _kind("residual tie -> lower index", 4, "argmax ties go to the lower token index",
          lambda rng: _draft(rng, 1, rng.randint(3, 5), 2), {"tie_high", "swap_pq"}),
    _kind("bonus tie -> lower index", 4, "argmax ties go to the lower token index", _small_u(1, 4, lambda k: 2),
          {"tie_high", "no_bonus"}),
    _kind("all accepted, no row K", 4, "no bonus token unless target_probs has a row K",
          lambda rng: _small_u(rng.randint(1, 3), 3, lambda k: k)(rng), {"bonus_without_row_k"}),
    _kind("K = 0 with a bonus row", 4, "an empty draft: nothing to verify, but row K = 0 gives the bonus",
          lambda rng: ([], [], [dyadic_row(rng, rng.randint(2, 5))], []), {"ignore_k0", "no_bonus"}),
    _kind("K = 0, no rows", 2, "an empty draft and no target rows", lambda rng: ([], [], [], []), ()),
    _kind("rows past K + 1 unused", 2, "the bonus comes from row K, the one right after the draft",
          _small_u(1, 3, lambda k: 4), {"no_bonus"}),
    _kind("5000-token vocabulary", 2, "a large vocabulary", _smooth(4, 5000, lambda k: k + 1), None),
    *[_kind(f"random draft {i}", 1, "a random draft", _smooth(k, v, lambda k, r=r: k + r), None)
      for i, (k, v, r) in enumerate([(1, 2, 1), (3, 4, 1), (5, 3, 0), (4, 6, 1)], start=1)],
    _kind("len(draft_probs) != K raises", 2, "one draft row per drafted token, else ValueError",
          _mismatch("draft_probs"), {"no_length_check"}),
    _kind("len(random_samples) != K raises", 2, "one uniform sample per drafted token, else ValueError",
          _mismatch("random_samples"), {"no_length_check"}),
    _kind("len(target_probs) < K raises", 2, "the target must score every drafted position, else ValueError",
          _mismatch("target_probs"), {"no_length_check"}),
    _kind("empty residual falls back to p", 4, "p <= q everywhere at a rejection (rows within the sum tolerance): "
          "the residual has no mass, and the course decides it falls back to p", _empty_residual,
          {"no_empty_fallback", "swap_pq"}),
    _kind("q(x) = 0 raises", 3, "a drafted token its draft row gives probability 0: ValueError", _zero_q,
          {"no_zero_q_check"}),
    _kind("a token id outside the vocabulary raises", 2, "a drafted token id must be in [0, V): a negative id, or "
          "one not below the row's length, is a ValueError", _bad_token, {"no_token_check"}),
    _row_kind("a row of logits raises", 3, "a row that is not a distribution (here: logits) raises ValueError "
              "naming it, as draft_probs[i] or target_probs[i]", "logits", {"no_row_check"}),
    _row_kind("a row of weights raises", 3, "a row must sum to 1 within 1e-4, else ValueError naming it",
              "weights", {"no_row_check", "row_signs_only"}),
    _row_kind("a negative entry raises", 2, "every entry must be finite and >= 0, even in a row summing to 1, "
              "else ValueError naming the row", "negative", {"no_row_check", "row_sum_only"}),
)

PUBLIC = (  # the problem's examples, verbatim
    case("example 1: all accepted, bonus", 10, ([2, 1], [[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]],
         [[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], [0.5, 0.4]), hidden=False),
    case("example 2: both accepted, no row K", 10, ([0, 1], [[0.8, 0.2], [0.9, 0.1]], [[0.9, 0.1], [0.1, 0.9]],
         [0.5, 0.8]), hidden=False),
    case("example 3: length mismatch", 5, ([0], [[0.5, 0.5]], [[0.5, 0.5]], [0.1, 0.2]), hidden=False),
)



EDGE = 1 / 64   # a twin's decisions keep this far from changing: a float's rounding cannot move them


def _path(tokens, q, p, u):
    """What a draft asks, whatever its names and values: (tokens kept, where the bonus comes from); None when a
    decision (an acceptance, an argmax) is within EDGE of going the other way."""
    try:
        out = verify_speculative_tokens(*copy.deepcopy((tokens, q, p, u)))
    except ValueError:
        return None
    n, k = out["acceptance_count"], len(tokens)
    for i in range(min(n + 1, k)):
        ratio = p[i][tokens[i]] / q[i][tokens[i]]
        if ratio < 1 and abs(u[i] - ratio) < EDGE:
            return None
    row = residual_distribution(p[n], q[n]) if n < k else p[k] if len(p) > k else None
    if row is not None and top_gap(row) < EDGE:
        return None
    return n, "residual" if n < k else "row K" if row is not None else "none"


def _rename(rng, example):
    """An example's twin: the same draft with its token ids renamed and its values moved (`cases.twins`): every row
    perturbed, every uniform moved, kept only when it asks what the example asks (`_path`)."""
    tokens, q, p, u = copy.deepcopy(example.calls[0]["args"])
    if example.expected == "raises ValueError":   # its twin is this, repaired: fresh uniforms as well
        return case(example.name, 0, (*renamed_draft(rng, tokens, q, p), [rng.randrange(64) / 64 for _ in u]))

    def draw(rng):
        moved = [min(max(v + rng.uniform(-1 / 8, 1 / 8), 0.0), 1.0) for v in u]
        t, q2, p2 = renamed_draft(rng, tokens, [perturbed_row(rng, r) for r in q], [perturbed_row(rng, r) for r in p])
        return t, q2, p2, moved
    asked = _path(tokens, q, p, u)   # None: the example itself sits on an edge; no draw can be said to ask the same
    twin = same_path(rng, draw, _path, asked) if asked is not None else None
    return case(example.name, 0, twin) if twin else None


def _repaired(args):
    """A bad input without its fault (`cases.twins`): every row that is not a distribution made one (`normalised`:
    negative and non-finite entries to 0, then scaled), then the draft cut before any length fault or any drafted
    token its draft row gives probability 0 (`repaired_draft`)."""
    tokens, q, p, u = args
    fix = lambda rows: [list(r) if all(0 <= v < math.inf for v in r) and abs(math.fsum(r) - 1) <= 1e-4
                        else normalised(r) for r in rows]
    return repaired_draft(tokens, fix(q), fix(p), u)


EXERCISE = Exercise("ex01", "verify_speculative_tokens", (FUNC,), PUBLIC, KINDS, MISTAKES, bonus=10,
                    rename=_rename, repair=checked(verify_speculative_tokens, _repaired))
