"""Twins of the exercises' cases (grader/cases.py says what they are for): rename an example, repair a fault.

`renamed_draft` relabels the vocabulary of a verify-style input: a random permutation of the
token ids applied to the drafted tokens and to every row, so the same example asks the same
question under other names (its answer comes from the reference again, ties and all).
`perturbed_row` moves a row's values (the same support, other weights), and `same_path` keeps
a twin only when it asks what its example asks (`path`, an exercise's own function of the
input: which tokens are kept, where a bonus comes from) with no decision near an edge: renamed
alone, a public example could be undone by matching its columns (issue 24: a table of the
examples earned 29/100 that way); renamed and moved, only the rule answers it.
`repaired_draft` is a bad verify-style input without its fault: the draft cut to the longest
prefix every argument covers, before any drafted token its draft row gives probability 0.
`checked(reference, repair)` keeps a repair only if the reference answers it without raising.

    >>> import random
    >>> renamed_row([0.5, 0.3, 0.2], [2, 0, 1])
    [0.3, 0.2, 0.5]
    >>> repaired_draft([0, 1], [[0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]], [0.1, 0.2])
    ([0], [[0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]], [0.1])
"""

import copy
import math


def permutation(rng, vocab):
    """A random permutation of range(vocab), never the identity when vocab > 1."""
    perm = list(range(vocab))
    while vocab > 1 and perm == list(range(vocab)):
        rng.shuffle(perm)
    return perm


def renamed_row(row, perm, size=None):
    """row with entry j moved to perm[j] (in a row of `size` entries, zeros elsewhere)."""
    out = [0.0] * (len(row) if size is None else size)
    for j, value in enumerate(row):
        out[perm[j]] = value
    return out


def perturbed_row(rng, row, spread=0.3):
    """Another distribution on the same support: each positive entry times e^N(0, spread), then renormalised.

    >>> import random
    >>> row = perturbed_row(random.Random(1), [0.5, 0.0, 0.5])
    >>> row[1], abs(sum(row) - 1) < 1e-12, row[0] != 0.5
    (0.0, True, True)
    """
    weights = [v * math.exp(rng.gauss(0.0, spread)) if v > 0 else 0.0 for v in row]
    total = sum(weights)
    return [w / total for w in weights] if total > 0 else list(row)


def same_path(rng, draw, path, example_path, tries=500):
    """The first input `draw(rng)` gives whose `path` is `example_path` (not None); None if `tries` draws find none."""
    for _ in range(tries):
        candidate = draw(rng)
        if path(*candidate) == example_path:
            return candidate
    return None


def top_gap(row):
    """How far the largest entry of `row` is above the next one (inf for a row of one entry)."""
    top = sorted(row, reverse=True)
    return top[0] - top[1] if len(top) > 1 else math.inf


def renamed_draft(rng, tokens, q, p):
    """(tokens, q, p) under a random renaming of the vocabulary, which also gains one to three ids that neither
    model gives any probability (so even a two-token example has many renamings)."""
    vocab = len((q or p or [[]])[0])
    size = vocab + rng.randint(1, 3) if vocab else 0
    perm = permutation(rng, size)[:vocab]
    return ([perm[x] for x in tokens], [renamed_row(r, perm, size) for r in q],
            [renamed_row(r, perm, size) for r in p])


def repaired_draft(tokens, q, p, *rest):
    """A verify-style input without its fault (see the module docstring); `rest`: a list of one per token
    (the uniforms) or anything else (an rng), kept."""
    k = min(len(tokens), len(q), len(p), *[len(r) for r in rest if isinstance(r, list)])
    for i in range(k):
        if not (0 <= tokens[i] < len(q[i])) or q[i][tokens[i]] == 0:
            k = i
            break
    rest = tuple(r[:k] if isinstance(r, list) else r for r in rest)
    return (list(tokens[:k]), [list(r) for r in q[:k]], [list(r) for r in p]) + rest


def padded(a, b):
    """Two rows of equal length: the shorter one padded with zeros (a distribution stays one)."""
    n = max(len(a), len(b))
    return list(a) + [0.0] * (n - len(a)), list(b) + [0.0] * (n - len(b))


def normalised(row):
    """A row of finite non-negative numbers scaled to sum to 1 (uniform if it has no mass)."""
    row = [v if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else 0.0 for v in row] or [1.0]
    total = sum(row)
    return [v / total for v in row] if total > 0 else [1.0 / len(row)] * len(row)


def checked(reference, repair):
    """`repair`, keeping its answer only where `reference` accepts it (else None: the case has no twin)."""
    def repaired(args):
        fixed = repair(copy.deepcopy(list(args)))
        if fixed is None:
            return None
        try:
            reference(*copy.deepcopy([_live(a) for a in fixed]))
        except (ValueError, TypeError):
            return None
        return list(fixed)
    return repaired


def _live(arg):
    """A plain-JSON argument as the worker builds it ({"$rng": s} -> random.Random(s))."""
    import random
    if type(arg) is dict and list(arg) == ["$rng"]:
        return random.Random(arg["$rng"])
    return arg
