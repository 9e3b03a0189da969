"""The n-gram draft's rows, stored compactly and built on first use (the storage behind `ngram.NGramModel`).

`ngram.py` says what the draft computes (Witten-Bell interpolation, distilled
counts) and answers the draft interface; this module says how its rows are
kept so that a draft step stays cheap on text the process has never seen. One
row per seen context h (order 0 first, then by length and key), stored as its
backoff weight lambda(h), the row of h' (h without its oldest id) and its few
nonzero entries w(h, x), so that

    q_k(. | h) = lambda(h) q_{k-1}(. | h') + w(h, .)

A row is then two array operations per context length, built on first use
along its suffix chain and cached (`CompactRows.row`). `level_weights` turns
counts or soft shares into (w, lambda) for both this lazy build and the model's
all-at-once `dense_table`, so that the two agree bit for bit.

    >>> rows = CompactRows(keys=[1, 5, 7], counts=[1, 3, 2], vocab_size=3, order=2)   # bigrams 01, 12 (x3), 21 (x2)
    >>> len(rows), rows.row_index([2, 1])    # rows: order 0, then contexts 0, 1, 2; [2, 1] ends in 1
    (4, 2)
    >>> [round(float(v), 4) for v in rows.row(2)]   # 1/4 of the add-one unigrams [1, 4, 4] / 9, plus 3/4 on id 2
    [0.0278, 0.1111, 0.8611]
"""

import operator
from array import array

import numpy as np


def level_weights(values, entry_row, total, distinct, soft):
    """(w per entry, lambda per row) for the rows of one context length: q = lambda q_lower + w.

    Hard counts: w = c(h, x) / (c(h) + T(h)) and lambda = T(h) / (c(h) + T(h)). Soft shares: the
    shares of h (sum S <= 1, or a little more after rounding) become s = c(h) pbar / max(S, 1); the
    mass they leave, c(h) (1 - S / max(S, 1)), joins T(h) in lambda. Either way sum w + lambda = 1.
    Subtle: S is a bincount, a sum in entry order, so a lazy and a dense build round it alike.
    """
    denominator = total + distinct
    if not soft:
        return values / denominator[entry_row], distinct / denominator
    S = np.bincount(entry_row, weights=values, minlength=len(total))
    scale = total / np.maximum(S, 1.0)
    return values * (scale / denominator)[entry_row], (distinct + (total - scale * S)) / denominator


def temper(rows, t):
    """q^(1/t) / sum q^(1/t) for each row of [B, V] `rows`, in log space."""
    logq = np.log(rows) / t
    w = np.exp(logq - logq.max(1, keepdims=True))
    return w / w.sum(1, keepdims=True)


class CompactRows:
    """The rows of an n-gram (n-grams `keys` as base-V numbers, oldest id first, seen `counts` times).

    `soft`: (keys h * V + w, lengths k, shares pbar(w | h)) of a distilled model, or None; kept
    sorted by (length, key) as `self.soft`. Contexts shorter than order - 1 are left-padded with `pad`.
    """

    def __init__(self, keys, counts, vocab_size, order, pad=0, soft=None):
        V, n = self.V, self.order = int(vocab_size), int(order)
        self.pad = int(pad)
        keys, counts = np.asarray(keys, dtype=np.int64), np.asarray(counts, dtype=np.int64)
        unigram = np.bincount(keys % V, weights=counts, minlength=V)
        base = (unigram + 1.0) / (unigram.sum() + V)                     # order 0: add-one
        base.setflags(write=False)
        self._rows, self._tempered = {0: base}, {}     # row -> read-only row; T -> {row: tempered row}; lazily
        self.soft = soft
        if soft is not None:  # entries sorted by (length, key): each context's shares are one slice
            skeys, lengths, share = soft
            if np.any((lengths[1:] < lengths[:-1]) | ((lengths[1:] == lengths[:-1]) & (skeys[1:] < skeys[:-1]))):
                self.soft = skeys, lengths, share = tuple(a[np.lexsort((skeys, lengths))] for a in soft)
            bounds = np.searchsorted(lengths, np.arange(n + 1))
        ctx_keys, parent, lam, entry_row, entry_id, entry_w = [np.zeros(1, np.int64)], [[0]], [[0.0]], [], [], []
        levels, grams, gram_count = {}, keys, counts.astype(float)
        for k in range(n - 1, 0, -1):  # (last k ids, next id) as one number, with its count (sums of ints: exact)
            grams = grams % V ** (k + 1)                   # drop the oldest id: V sorted runs, merged by a stable sort
            by = np.argsort(grams, kind="stable")
            grams = grams[by]
            first = np.flatnonzero(np.r_[True, grams[1:] != grams[:-1]])
            levels[k] = grams, gram_count = grams[first], np.add.reduceat(gram_count[by], first)
        for k in range(1, n):
            pairs, pair_count = levels[k]
            ctx = pairs // V
            start = np.flatnonzero(np.r_[True, ctx[1:] != ctx[:-1]])
            uniq, size = ctx[start], np.diff(np.append(start, len(pairs)))
            offset = sum(map(len, ctx_keys))                               # the row of uniq[0]
            parent.append(np.searchsorted(ctx_keys[-1], uniq % V ** (k - 1)) + offset - len(ctx_keys[-1]))
            if soft is None:   # hard counts: the context's (next, count) pairs
                rows, ids, values = np.repeat(np.arange(len(uniq)), size), pairs % V, pair_count
            else:
                block = skeys[bounds[k]:bounds[k + 1]]
                rows = np.minimum(np.searchsorted(uniq, block // V), len(uniq) - 1)
                if np.any(uniq[rows] != block // V):
                    raise ValueError(f"soft counts of length {k} name a context the counts never saw")
                ids, values = block % V, share[bounds[k]:bounds[k + 1]]
            total = np.add.reduceat(pair_count, start)                     # c(h): sums of integer counts
            w, lam_k = level_weights(values, rows, total, size.astype(float), soft is not None)
            lam.append(lam_k)
            entry_row.append(rows + offset)
            entry_id.append(ids.astype(np.uint8 if V <= 256 else np.intp))
            entry_w.append(w)
            ctx_keys.append(uniq)
        self.size = sum(map(len, ctx_keys))
        rows = np.concatenate(entry_row) if entry_row else np.zeros(0, np.int64)
        self._ids = np.concatenate(entry_id) if entry_id else np.zeros(0, np.uint8)
        self._w = np.concatenate(entry_w) if entry_w else np.zeros(0)
        # Python arrays: the build walks a chain of rows one by one, and indexing one gives a plain int or
        # float, far faster than a NumPy scalar; at 8 bytes an entry, a fifth of a list's memory
        self._parent = array("q", np.concatenate(parent).astype(np.int64).tobytes())
        self._lambda = array("d", np.concatenate(lam).tobytes())
        ends = np.cumsum(np.bincount(rows, minlength=self.size))           # rows is sorted: one slice per row
        self._lo = array("q", np.concatenate([[0], ends[:-1]]).astype(np.int64).tobytes())
        self._hi = array("q", ends.astype(np.int64).tobytes())
        # Fast path, one lookup per draft step: the bytes of a full (order - 1)-id context -> its row.
        self.full = None
        if 1 < n and V <= 256:
            digits = (ctx_keys[-1][:, None] // V ** np.arange(n - 2, -1, -1) % V).astype(np.uint8)  # oldest first
            self.full = dict(zip(digits.view(f"V{n - 1}").ravel().tolist(), range(self.size - len(ctx_keys[-1]),
                                                                                  self.size)))
        # One dict per shorter context length (all lengths without the fast path): last k ids as base V -> row.
        offsets = np.cumsum([len(c) for c in ctx_keys])
        # With the fast path, the shorter lengths by bytes too: on a miss, the longest seen suffix is the first
        # of bytes(context[-k:]) found for k = order - 2, ..., 1 (every suffix of a seen context is seen).
        self._suffix = None
        if self.full is not None:
            self._suffix = [None] + [
                dict(zip((keys[:, None] // V ** np.arange(k - 1, -1, -1) % V).astype(np.uint8).view(f"V{k}")
                         .ravel().tolist(), range(off - len(keys), off)))
                for k, (keys, off) in enumerate(zip(ctx_keys[1:n - 1], offsets[1:n - 1]), start=1)]
        self._index = [dict(zip(keys.tolist(), range(off - len(keys), off)))
                       for keys, off in zip(ctx_keys[:n - 1] if self.full is not None else ctx_keys, offsets)]

    def __len__(self):
        return self.size

    def row_index(self, context):
        """Row of the longest seen suffix of `context` (at most order - 1 ids)."""
        n, V = self.order, self.V
        if self.full is not None and len(context) >= n - 1:
            # seen in full: the longest suffix (an array of wide ints has more bytes than any key: a miss)
            try:
                row = self.full.get(bytes(context[-(n - 1):]))
            except (ValueError, TypeError):   # an id outside [0, 256) in a list: checked below
                row = None
            if row is not None:
                return row
            row = self._longest_seen_suffix(context)
            if row is not None:
                return row
        ctx = list(context[-(n - 1):]) if n > 1 else []
        ctx = [self.pad] * (n - 1 - len(ctx)) + ctx
        best, key, scale = 0, 0, 1
        for k in range(1, n):  # grow the suffix one id at a time; stop at the first unseen one
            t = int(ctx[-k])
            if t != ctx[-k] or not 0 <= t < V:   # Subtle: an id >= V would alias another context's key
                raise ValueError(f"context[{len(context) - k}] is {ctx[-k]!r}, not a token id in [0, {V})")
            key += t * scale
            scale *= V
            # the longest seen suffixes only in the fast path's dict (its ids are then seen ones, < V <= 256)
            row = self._index[k].get(key) if k < len(self._index) else self.full.get(bytes(int(t) for t in ctx))
            if row is None:
                break
            best = row
        return best

    def _longest_seen_suffix(self, context):
        """row_index's second fast path (a context of >= order - 1 ids whose last order - 1 were never seen
        together): the longest seen suffix by one bytes lookup per length, or None to take the checked loop."""
        V = self.V
        try:
            for k in range(self.order - 2, 0, -1):
                row = self._suffix[k].get(bytes(context[-k:]))
                if row is not None:
                    before = context[-k - 1]       # the loop would check this id, the first not in the suffix
                    return row if type(before) is int and 0 <= before < V else None
        except (ValueError, TypeError):            # an id outside [0, 256), or not an int: the loop names it
            return None
        return None

    def row(self, r):
        """The read-only row r of q, built on first use with the rows of its suffixes."""
        row = self._rows.get(r)
        chain = []
        while row is None:  # climb to the longest cached suffix (row 0, order 0, always is)
            chain.append(r)
            r = self._parent[r]
            row = self._rows.get(r)
        for r in reversed(chain):   # q_k(. | h) = lambda(h) q_{k-1}(. | h') + w(h, .)
            row = row * self._lambda[r]
            lo, hi = self._lo[r], self._hi[r]
            row[self._ids[lo:hi]] += self._w[lo:hi]
            row.setflags(write=False)
            self._rows[r] = row
        return row

    def tempered_row(self, r, t):
        """Row r tempered: q^(1/t) / sum q^(1/t), cached per (t, row); t = 1 is the row itself."""
        if t == 1.0:
            return self.row(r)
        rows = self._tempered.get(t)
        if rows is None:
            if not t > 0:
                raise ValueError(f"temperature must be > 0 here, got {t!r} (use argmax for greedy)")
            rows = self._tempered[t] = {}
        row = rows.get(r)
        if row is None:
            row = rows[r] = temper(self.row(r)[None, :], t)[0]
            row.setflags(write=False)
        return row


class RowSequence:
    """A read-only sequence of the rows (`NGramModel.table`, or a tempered one), each built on first use."""

    def __init__(self, rows, temperature):
        self._rows, self._t = rows, temperature

    def __len__(self):
        return self._rows.size

    def __getitem__(self, i):
        if isinstance(i, (list, tuple, np.ndarray)):
            return np.stack([self[j] for j in i]) if len(i) else np.zeros((0, self._rows.V))
        i = operator.index(i)
        if not -len(self) <= i < len(self):
            raise IndexError(f"row {i} is outside the {len(self)} rows")
        return self._rows.tempered_row(i % len(self), self._t)
