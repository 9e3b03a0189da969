"""Exercise 1's cases: `verify_speculative_tokens`, the graded problem (100 points, +10 for plain Python).

Public: the problem's three examples, verbatim (25 points). Hidden (75): one
kind per edge the rule decides, each generated from the seed so that exactly
the catalogued mistakes it names fail it (see `cases.generate`), plus random
drafts and a 5000-token vocabulary. Rows of the edge kinds are multiples of
1/32, exact in binary floating point, so `u == p(x)/q(x)` is a true tie
however a submission computes it (`u <= p/q` or `u * q <= p`).

The catalogue of mistakes (`MISTAKES`) is one small wrong implementation with
a switch per mistake; it runs in the parent only, for the diagnosis.

    >>> EXERCISE.max_score, sum(c.points for c in EXERCISE.public)
    (100, 25)
"""

import copy

from exercises.common.rows import dyadic_row, smooth_row
from exercises.common.twins import checked, renamed_draft, repaired_draft
from exercises.common.verify_dict import verify_judge
from grader.cases import Case, Exercise, Kind, Mistake
from grader.judge import raises_judge
from specdec.verify import verify_speculative_tokens

FUNC = "verify_speculative_tokens"
NAMES = ("draft_tokens", "draft_probs", "target_probs", "random_samples")


def case(name, points, args, hidden=True, hint=""):
    """A case whose expected value is the reference's answer (or ValueError, if the reference raises)."""
    calls = ({"args": list(args)},)
    try:
        expected = verify_speculative_tokens(*copy.deepcopy(args))
    except ValueError:
        return Case(name, points, FUNC, NAMES, calls, raises_judge("ValueError"), hidden, hint, "raises ValueError")
    return Case(name, points, FUNC, NAMES, calls, verify_judge(expected, calls, NAMES), hidden, hint, repr(expected))


# ---- the catalogue of known mistakes (trusted, parent only) ------------------------------------------
def _argmax(row, ties="low"):
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best] or (ties == "high" and row[j] == row[best]):
            best = j
    return best


def _residual(p, q):
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    return [e / mass for e in excess] if mass > 0 else list(p)


def wrong_verify(tokens, q, p, u, strict=False, stop=True, correction="residual", ties="low",
                 bonus_row="K", empty_draft=True, lengths=True, swap=False):
    """The rule with one switch per known mistake (the defaults are the right rule)."""
    k = len(tokens)
    if lengths and (len(q) != k or len(u) != k or len(p) < k):
        raise ValueError("mismatched lengths")
    if not empty_draft and k == 0:
        return {"accepted_tokens": [], "bonus_token": None, "acceptance_count": 0}
    accepted, fix = [], None
    for i, x in enumerate(tokens):
        top, bottom = (q[i], p[i]) if swap else (p[i], q[i])
        ratio = min(1.0, top[x] / bottom[x])
        if u[i] < ratio if strict else u[i] <= ratio:
            accepted.append(x)
        elif fix is None:
            fix = _argmax(top if correction == "p" else _residual(top, bottom), ties)
            if stop:
                break
    if fix is None:
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
    _mistake("ignore_k0", "an empty draft (K = 0) returns no bonus; with a row 0 the bonus is its argmax",
             empty_draft=False),
    _mistake("no_length_check", "mismatched lengths do not raise ValueError", lengths=False),
    _mistake("swap_pq", "p and q are swapped: the ratio is p(x)/q(x), target over draft (Example 2 is the "
             "classic trap)", swap=True),
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


def _smooth(k, vocab, rows):
    def make(rng):
        q = [smooth_row(rng, vocab) for _ in range(k)]
        p = [smooth_row(rng, vocab) for _ in range(rows(k))]
        tokens = [rng.choices(range(vocab), weights=row)[0] for row in q]
        return tokens, q, p, [rng.random() for _ in range(k)]
    return make


RULE = "accept while u_i <= min(1, p_i(x)/q_i(x))"
KINDS = (
    _kind("reject at the first step", 4, "a rejection at step 0: nothing accepted, the correction is the bonus",
          lambda rng: _draft(rng, 2, 3, 2, [rng.randrange(40, 64) / 64 for _ in range(2)]), {"swap_pq"}),
    _kind("stop at the first rejection", 6, "after a rejection, later draft tokens are not verified",
          lambda rng: _draft(rng, 3, rng.randint(3, 4), 3 + rng.randint(0, 1)), {"no_stop", "swap_pq"}),
    _kind("u == p/q is accepted", 5, f"u exactly equal to the ratio: {RULE}, with <=", _boundary, {"strict_less"}),
    _kind("u = 0 accepts even p(x) = 0", 3, "the rule is u <= min(1, p/q): 0 <= 0 holds", _zero_p(0.0),
          {"strict_less", "swap_pq"}),
    _kind("p(x) = 0 rejects", 3, "a token the target gives probability 0 is rejected for any u > 0",
          _zero_p(0.5), {"swap_pq"}),
    _kind("ratio above 1 always accepts", 4, "min(1, p/q) is 1 when p(x) > q(x)",
          lambda rng: _draft(rng, rng.randint(1, 2), 3, 3, [rng.randrange(48, 64) / 64 for _ in range(2)]),
          {"swap_pq"}),
    _kind("correction: residual, not target", 6, "on rejection take the argmax of normalize(max(0, p - q))",
          lambda rng: _draft(rng, 1, rng.randint(3, 5), 1), {"target_argmax", "swap_pq"}),
    _kind("residual tie -> lower index", 4, "argmax ties go to the lower token index",
          lambda rng: _draft(rng, 1, rng.randint(3, 5), 2), {"tie_high", "swap_pq"}),
    _kind("bonus tie -> lower index", 4, "argmax ties go to the lower token index", _small_u(1, 4, lambda k: 2),
          {"tie_high"}),
    _kind("all accepted, no row K", 5, "no bonus token unless target_probs has a row K",
          lambda rng: _small_u(rng.randint(1, 3), 3, lambda k: k)(rng), {"bonus_without_row_k"}),
    _kind("K = 0 with a bonus row", 4, "an empty draft: nothing to verify, but row K = 0 gives the bonus",
          lambda rng: ([], [], [dyadic_row(rng, rng.randint(2, 5))], []), {"ignore_k0"}),
    _kind("K = 0, no rows", 2, "an empty draft and no target rows", lambda rng: ([], [], [], []), ()),
    _kind("rows past K + 1 unused", 3, "the bonus comes from row K, the one right after the draft",
          _small_u(1, 3, lambda k: 4), ()),
    _kind("5000-token vocabulary", 5, "a large vocabulary", _smooth(4, 5000, lambda k: k + 1), None),
    *[_kind(f"random draft {i}", 2, "a random draft", _smooth(k, v, lambda k, r=r: k + r), None)
      for i, (k, v, r) in enumerate([(1, 2, 1), (3, 4, 1), (5, 3, 0), (4, 6, 1)], start=1)],
    _kind("len(draft_probs) != K raises", 3, "one draft row per drafted token, else ValueError",
          _mismatch("draft_probs"), {"no_length_check"}),
    _kind("len(random_samples) != K raises", 3, "one uniform sample per drafted token, else ValueError",
          _mismatch("random_samples"), {"no_length_check"}),
    _kind("len(target_probs) < K raises", 3, "the target must score every drafted position, else ValueError",
          _mismatch("target_probs"), {"no_length_check"}),
)

PUBLIC = (  # the problem's examples, verbatim
    case("example 1: all accepted, bonus", 10, ([2, 1], [[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]],
         [[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], [0.5, 0.4]), hidden=False),
    case("example 2: both accepted, no row K", 10, ([0, 1], [[0.8, 0.2], [0.9, 0.1]], [[0.9, 0.1], [0.1, 0.9]],
         [0.5, 0.8]), hidden=False),
    case("example 3: length mismatch", 5, ([0], [[0.5, 0.5]], [[0.5, 0.5]], [0.1, 0.2]), hidden=False),
)



def _rename(rng, example):
    """An example's twin: the same draft with its token ids renamed (`cases.twins`)."""
    tokens, q, p, u = copy.deepcopy(example.calls[0]["args"])
    if example.expected == "raises ValueError":   # its twin is this, repaired: fresh uniforms as well
        u = [rng.randrange(64) / 64 for _ in u]
    return case(example.name, 0, (*renamed_draft(rng, tokens, q, p), u))


EXERCISE = Exercise("ex01", "verify_speculative_tokens", (FUNC,), PUBLIC, KINDS, MISTAKES, bonus=10,
                    rename=_rename, repair=checked(verify_speculative_tokens, lambda args: repaired_draft(*args)))
