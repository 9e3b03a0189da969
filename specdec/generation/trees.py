"""Draft trees: which candidates a step spends its positions on (the shapes; verification is `multidraft`'s).

A tree is two lists in topological order, `tokens[i]` under `parents[i]` (-1:
the root, the text so far), and the draft rows q_rows (row 0 the root's, row i + 1
node i's, None for a node without children) that each node's children were drawn
from, without replacement, in index order: what recursive rejection needs to stay
lossless (lesson 11). Two shapes:

- `full_tree`: `width` children under every node, `depth` levels (width + ... +
  width^depth nodes). Most of its positions go to alternatives of a first
  candidate that a good draft gets right anyway.
- `threshold_tree`: a node's path is as likely as the product of q along it; a
  candidate is added only where its path would be at least `threshold` likely
  (EAGLE-2's dynamic tree, Li et al. 2024, with a threshold in place of a global
  budget). With a confident draft it is a chain; where the draft hesitates, it adds
  the second candidate there. At T > 0 the candidates are draws without replacement,
  and whether a node gets a j-th child is decided BEFORE that child is drawn, from
  its path and the mass its earlier children left (a decision that looked at the draw,
  or at other branches' draws, would pick which draws the verifier sees, and bias
  the text): each level stays recursive rejection of q's own draws, lossless.

`threshold_tree` takes the draft's rows through `rows(paths)`: the rows q(. | ids + path)
for a list of paths (`draft_rows` for a `Draft`); `full_tree` asks a `Draft` itself,
one `next_token_probs` call per level.

    >>> q = {(): [0.0, 0.9, 0.1], (1,): [0.5, 0.0, 0.5], (2,): [1.0, 0.0, 0.0]}
    >>> rows = lambda paths: [np.array(q.get(tuple(p), [1 / 3] * 3)) for p in paths]
    >>> tokens, parents, _, _ = threshold_tree(rows, threshold=0.3, depth=2, width=2, temperature=0.0, rng=None)
    >>> tokens, parents          # 1 (0.9); under it 0 and 2 (0.45 each); 2 beside 1 is only 0.1 likely
    ([1, 0, 2], [-1, 0, 0])
"""

import numpy as np


class ThresholdTreeDraft:
    """A tree draft (`generation.interface`: `tree`) over any Draft's rows: its `threshold_tree`."""

    def __init__(self, draft, threshold):
        self.draft, self.threshold, self.V = draft, float(threshold), draft.V

    def tree(self, ids, depth, width, temperature, rng):
        return threshold_tree(draft_rows(self.draft, ids, temperature), self.threshold, depth, width, temperature,
                              rng)


def draft_rows(draft, ids, temperature):
    """rows(paths) for a Draft: q(. | ids + path) at T (at T = 0 the untempered rows, whose order is argmax's); a
    draft with `row_of` (`models.topk.TopKDraft`) gives its sparse rows, one lookup each."""
    if hasattr(draft, "row_of"):
        return lambda paths: [draft.row_of(ids + list(p), temperature or 1.0) for p in paths]
    return lambda paths: draft.next_token_probs([ids + list(p) for p in paths], temperature or 1.0)


class _Candidates:
    """A node's children in the order the draft proposes them: its likeliest ids (T = 0, ties to the lower id)
    or draws without replacement (T > 0), from a dense row or a row with `entries()` (a `topk.SparseRow`)."""

    def __init__(self, row, temperature, rng):
        if hasattr(row, "entries"):
            ids, probs = row.entries()                          # already likeliest first
        else:
            dense = np.asarray(row, dtype=np.float64)
            ids = np.flatnonzero(dense > 0)
            probs = dense[ids]
            if temperature == 0:
                order = np.argsort(-probs, kind="stable")
                ids, probs = ids[order], probs[order]
        keep = probs > 0
        self.ids, self.probs = ids[keep].tolist(), probs[keep].astype(np.float64).tolist()
        self.mass = sum(self.probs)
        self.temperature, self.rng, self.given = temperature, rng, 0

    def next(self):
        """(the next candidate, its q) or None when the row has no mass left."""
        if not self.ids:
            return None
        if self.temperature == 0:
            j = 0
        else:                                                   # inverse CDF over what is left
            u, j = self.rng.random() * sum(self.probs), 0
            while j < len(self.probs) - 1 and u >= self.probs[j]:
                u -= self.probs[j]
                j += 1
        self.given += 1
        return self.ids.pop(j), self.probs.pop(j)


def full_tree(draft, ids, depth, width, temperature, rng):
    """(tokens, parents, q_rows, draft contexts): `width` children per node, `depth` levels; each level's rows
    in one draft call (`next_token_probs`)."""
    tokens, parents, q_rows, paths, frontier, contexts = [], [], [None], {-1: []}, [-1], 0
    for _ in range(depth):
        contexts += len(frontier)
        level = draft.next_token_probs([ids + paths[f] for f in frontier], temperature or 1.0)   # [len(frontier), V]
        new = []
        for f, q in zip(frontier, level):
            q_rows[f + 1] = q
            kids = _Candidates(q, temperature, rng)
            for _ in range(width):
                kid = kids.next()
                if kid is None:
                    break
                tokens.append(kid[0])
                parents.append(f)
                q_rows.append(None)
                paths[len(tokens) - 1] = paths[f] + [kid[0]]
                new.append(len(tokens) - 1)
        frontier = new
    return tokens, parents, q_rows, contexts


def threshold_tree(rows, threshold, depth, width, temperature, rng):
    """(tokens, parents, q_rows, draft contexts): every candidate whose path is at least `threshold` likely under
    the draft, at most `depth` levels and `width` children per node (module docstring), level by level.

    A child's path probability is its parent's times q(child). Whether a node gets its j-th child: at T = 0, if
    that probability is >= threshold (the candidates are the likeliest ids, in order); at T > 0, if its parent's
    probability times the mass q has left after the earlier children is, and only then is the child drawn.
    """
    tokens, parents, q_rows, contexts = [], [], [None], 0
    frontier = [(-1, [], 1.0)]                  # (node, path, path probability)
    for _ in range(depth):
        wanted = [(node, path, score) for node, path, score in frontier if score >= threshold]
        if not wanted:
            break
        level = rows([path for _, path, _ in wanted])
        contexts += len(wanted)
        frontier = []
        for (node, path, score), q in zip(wanted, level):
            kids, added = _Candidates(q, temperature, rng), 0
            mass = kids.mass
            while added < width:
                if temperature > 0 and score * mass < threshold:    # decided before the draw
                    break
                kid = kids.next()
                if kid is None or temperature == 0 and score * kid[1] < threshold:
                    break
                x, qx = kid
                mass -= qx
                tokens.append(x)
                parents.append(node)
                q_rows.append(None)
                frontier.append((len(tokens) - 1, path + [x], score * qx))
                added += 1
            if added:
                q_rows[node + 1] = q
    return tokens, parents, q_rows, contexts
