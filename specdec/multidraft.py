"""Many drafts for one position (recursive rejection), and token trees verified with it (plain Python).

One position, target row p, candidates x_1..x_k, candidate x_j drawn from q_j
(SpecInfer, Miao et al. 2023; SpecTr, Sun et al. 2023; Jeon et al. 2024):

    r_1 = p
    for j = 1..k:  accept x_j if u_j < min(1, r_j(x_j) / q_j(x_j))   (the token rule, against r_j)
                   else r_{j+1} = normalize(max(0, r_j - q_j))      (what r_j has that q_j lacks)
    all rejected:  y ~ r_{k+1}

Why the token is distributed as p: stage j is the one-token rule between r_j and
q_j. It emits y as x_j with probability min(q_j(y), r_j(y)); otherwise, with
probability 1 - sum min(q_j, r_j) = sum max(0, r_j - q_j), it hands over to stages
that (by induction from the last) emit r_{j+1} = max(0, r_j - q_j) / that sum.
Together: min(q_j, r_j) + max(0, r_j - q_j) = r_j, and r_1 = p. The induction
needs one thing of q_j: it is the distribution x_j was drawn from GIVEN the
candidates before it (and independent of the uniforms). Hence:

- i.i.d. draws from one q: q_j = q for every j. A repeat of a rejected token is
  wasted: r_{j+1}(x) = 0 for a rejected x, so it is rejected again surely.
- draws without replacement from q (distinct candidates): q_j = q with x_1..x_{j-1}
  removed and renormalised, q(x) / (1 - q(x_1) - ... - q(x_{j-1})); that is
  `without_replacement_probs`. Passing q itself there is a classic mistake and
  is NOT lossless (`exact.multi_draft_distribution(..., naive=True)` measures it).

    >>> p, q = [0.5, 0.5, 0.0], [0.0, 0.5, 0.5]
    >>> without_replacement_probs(q, [2, 1])          # after drawing 2, only 1 is left
    [[0.0, 0.5, 0.5], [0.0, 1.0, 0.0]]
    >>> multi_draft_sample([2, 1], without_replacement_probs(q, [2, 1]), p, rng=0)  # p(2) = 0; r_2 = [1, 0, 0]
    {'token': 0, 'accepted_index': None}

Token trees (SpecInfer, EAGLE, Medusa): the draft proposes several children per
node; the target scores every node in one call; `verify_tree` walks down from
the root, choosing among each node's children with the rule above, and stops at
the first node whose children are all rejected (then y ~ the final r) or at a
leaf (then y ~ the target's row there). Each level is lossless given the path
so far, so the whole walk is. A chain is the tree with one child per node.
"""

from __future__ import annotations

import math
import numbers
import operator
import random
from collections.abc import Sequence

from ._checks import check_bool, check_row, check_sequence, check_target_rows, check_token, first_too_large, shown
from .rules import PlainRows, token_accepts
from .sampling import make_rng

MAX_CANDIDATES = 1_000_000   # per position: far more than any tree has, few enough to draw at once


def without_replacement_row(q: Sequence[float], removed: Sequence[int]) -> Sequence[float]:
    """q with the ids in `removed` set to 0 and the rest renormalised (a list of floats; q itself if none)."""
    if not removed:
        return q
    removed = set(removed)
    try:
        kept = [0.0 if j in removed else float(v) for j, v in enumerate(q)]
    except OverflowError:
        raise first_too_large(q=q) from None
    mass = math.fsum(kept)
    return [v / mass for v in kept] if mass > 0 else kept


def without_replacement_probs(q: Sequence[float], candidates: Sequence[int]) -> list[Sequence[float]]:
    """The rows q_1..q_k that candidates drawn one by one WITHOUT replacement from q were drawn from."""
    return [without_replacement_row(q, candidates[:j]) for j in range(len(candidates))]


class TreeRows(PlainRows):
    """PlainRows plus the one row operation trees add."""

    without = staticmethod(without_replacement_row)


def recursive_rejection(candidates: Sequence[int], q_rows: Sequence[Sequence[float]], p_row: Sequence[float],
                        rng: random.Random, rows: type[TreeRows] = TreeRows) -> tuple[int | None, int]:
    """The rule's loop on validated rows: (index of the accepted candidate or None, the emitted token)."""
    r = p_row
    for j, x in enumerate(candidates):
        if token_accepts(rng.random(), r[x], q_rows[j][x]):
            return j, x
        r = rows.residual(r, q_rows[j])                 # r_{j+1}; r itself if nothing is left (float rounding)
    return None, rows.sample(r, rng)


def multi_draft_sample(candidates: Sequence[int], draft_probs: Sequence[Sequence[float]], target_probs: Sequence[float],
                       rng: random.Random | int | None = None) -> dict:
    """One position, k candidates, candidates[j] drawn from draft_probs[j] given the ones before it.

    target_probs is the target's row p for this position. Returns {"token": y,
    "accepted_index": j or None}; y is distributed exactly as p. Errors as `speculative_sample`.
    """
    candidates = check_sequence(candidates, "candidates")
    draft_probs = check_sequence(draft_probs, "draft_probs")
    if len(draft_probs) != len(candidates):
        raise ValueError(f"len(draft_probs) is {len(draft_probs)} but len(candidates) is {len(candidates)}: "
                         "one draft row per candidate")
    p = check_row(target_probs, "target_probs")
    q = [check_row(row, f"draft_probs[{j}]", len(p), "target_probs") for j, row in enumerate(draft_probs)]
    tokens = [check_token(x, f"candidates[{j}]", len(p)) for j, x in enumerate(candidates)]
    for j, x in enumerate(tokens):
        if q[j][x] == 0.0:
            raise ValueError(f"draft_probs[{j}][{x}] is 0 but candidates[{j}] is {x}: the draft cannot have "
                             "proposed it (drawn without replacement? then use without_replacement_probs)")
    j, y = recursive_rejection(tokens, q, p, make_rng(rng))
    return {"token": y, "accepted_index": j}


def draw_candidates(q: Sequence[float], k: int, rng: random.Random | int | None = None,
                    replace: bool = False) -> list[int]:
    """k candidates from the row q: i.i.d. (replace=True) or distinct (fewer if q has fewer tokens with mass)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if not 0 <= k <= MAX_CANDIDATES:
        raise ValueError(f"k is {shown(k)}; it must be in [0, {MAX_CANDIDATES}]")
    _check_replace(replace)
    rng, row, out = make_rng(rng), check_row(q, "q"), []
    for _ in range(k):
        if not replace and not any(v > 0 for v in row):
            break
        x = TreeRows.sample(row, rng)
        out.append(x)
        if not replace:
            row[x] = 0.0
    return out


def _check_replace(replace):
    # Subtle: any truthy value ("no", 0.5) would silently switch to i.i.d. draws, another law for q_j.
    check_bool(replace, "replace", " (i.i.d. draws or without replacement)")


def children_by_row(parents: Sequence[int]) -> list[list[int]]:
    """children[0] = the root's children, children[i + 1] = node i's, each in index order."""
    children = [[] for _ in range(len(parents) + 1)]
    for i, parent in enumerate(parents):
        children[parent + 1].append(i)
    return children


def tree_rule(tokens: Sequence[int], parents: Sequence[int], q: Sequence[Sequence[float]],
              p: Sequence[Sequence[float]], rng: random.Random, replace: bool = False,
              rows: type[TreeRows] = TreeRows) -> tuple[list[int], int]:
    """Verify a validated tree top-down: (the accepted nodes, root first; the next token)."""
    children, path, at = children_by_row(parents), [], 0          # at: the row of the current context
    while children[at]:
        kids = children[at]
        candidates = [tokens[i] for i in kids]
        q_rows = [q[at]] * len(kids) if replace else [rows.without(q[at], candidates[:j]) for j in range(len(kids))]
        j, y = recursive_rejection(candidates, q_rows, p[at], rng, rows)
        if j is None:
            return path, y
        path.append(kids[j])
        at = kids[j] + 1
    return path, rows.sample(p[at], rng)                           # a leaf: the bonus


def greedy_tree_rule(tokens: Sequence[int], parents: Sequence[int], best: Sequence[int]) -> tuple[list[int], int]:
    """Temperature 0: follow the child whose token is argmax p (best[row]); stop where none is."""
    children, path, at = children_by_row(parents), [], 0
    while True:
        kid = next((i for i in children[at] if tokens[i] == best[at]), None)
        if kid is None:
            return path, best[at]
        path.append(kid)
        at = kid + 1


def _check_parent(parent, i):
    if isinstance(parent, bool) or type(parent).__name__ in ("bool", "bool_"):
        raise TypeError(f"parents[{i}] is {parent!r}: a node index must be an integer, not a bool")
    try:
        parent = operator.index(parent)
    except TypeError:
        raise TypeError(f"parents[{i}] must be an integer node index, got {type(parent).__name__}") from None
    if not -1 <= parent < i:   # earlier nodes only: the list is in topological order, so there is no cycle
        raise ValueError(f"parents[{i}] is {shown(parent)}: a parent is -1 (the root) or an earlier node in [0, {i})")
    return parent


def verify_tree(tokens: Sequence[int], parents: Sequence[int], draft_probs: Sequence[Sequence[float]],
                target_probs: Sequence[Sequence[float]], rng: random.Random | int | None = None,
                replace: bool = False) -> dict:
    """Verify a draft tree; return speculative_sample's dict plus "accepted_nodes".

    Node i holds the drafted id tokens[i]; parents[i] is its parent (-1: a child of
    the root, the context already generated), earlier in the list (parents[i] < i).
    Row 0 of draft_probs / target_probs belongs to the root context, row i + 1 to
    the context that ends with node i (n + 1 rows each, the target scoring every
    node). A node's children were drawn from its draft row: i.i.d. (replace=True)
    or without replacement (replace=False, the default: siblings are distinct).
    Draft rows of nodes without children are never read and may be None.

    >>> verify_tree([1, 0], [-1, -1], [[0.5, 0.5], None, None],   # two children of the root: 1, then 0
    ...             [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]], rng=0)   # p(1) = 0: rejected; 0 is accepted surely
    {'accepted_tokens': [0], 'accepted_nodes': [1], 'bonus_token': 1, 'acceptance_count': 1}
    """
    _check_replace(replace)
    tokens = check_sequence(tokens, "tokens")
    parents = check_sequence(parents, "parents")
    draft_probs, target_probs = check_sequence(draft_probs, "draft_probs"), check_sequence(target_probs, "target_probs")
    n = len(tokens)
    if len(parents) != n:
        raise ValueError(f"len(parents) is {len(parents)} but len(tokens) is {n}: one parent per node")
    for name, rows in (("draft_probs", draft_probs), ("target_probs", target_probs)):
        if len(rows) != n + 1:
            raise ValueError(f"len({name}) is {len(rows)} but the tree has {n} nodes: {name} needs {n + 1} rows "
                             "(row 0 for the root context, row i + 1 for node i)")
    p = check_target_rows(target_probs)
    vocab = len(p[0])
    parents = [_check_parent(parent, i) for i, parent in enumerate(parents)]
    tokens = [check_token(x, f"tokens[{i}]", vocab) for i, x in enumerate(tokens)]
    children = children_by_row(parents)
    q = [check_row(row, f"draft_probs[{r}]", vocab, "target_probs[0]") if children[r] or row is not None else None
         for r, row in enumerate(draft_probs)]
    for r, kids in enumerate(children):
        seen = {}
        for i in kids:
            if not replace and tokens[i] in seen:
                raise ValueError(f"tokens[{i}] is {tokens[i]}, as its sibling tokens[{seen[tokens[i]]}]: siblings "
                                 "drawn without replacement are distinct (pass replace=True for i.i.d. draws)")
            seen[tokens[i]] = i
            if q[r][tokens[i]] == 0.0:
                raise ValueError(f"draft_probs[{r}][{tokens[i]}] is 0 but tokens[{i}] is {tokens[i]}: "
                                 "the draft cannot have proposed it")
    path, y = tree_rule(tokens, parents, q, p, make_rng(rng), replace)
    return {"accepted_tokens": [tokens[i] for i in path], "accepted_nodes": path, "bonus_token": y,
            "acceptance_count": len(path)}
