"""The draft q: a character n-gram model with Witten-Bell interpolation.

Counting is the whole of training. For a context h (the last k characters)
with c(h, w) counts and T(h) distinct followers,

    q_k(w | h) = (c(h, w) + T(h) q_{k-1}(w | h')) / (c(h) + T(h))

where h' drops the oldest character; the order-0 base is add-one smoothed
unigrams, so every q(w) > 0 (a draft never proposes a token it gave
probability 0, and p/q is always defined).

Distilled (`NGramModel.distil`, after DistillSpec, Zhou et al. 2023): the
hard count c(h, w) is replaced by the soft count s(h, w) = c(h) pbar(w | h),
where pbar averages the target's p(w | full window) over the positions whose
context is h, so q learns what p predicts, not what the text did. c(h) and
T(h) stay hard. Shares pbar below `min_share` are dropped and their mass d(h)
joins the backoff: q_k = (s(h, w) + (T(h) + d(h)) q_{k-1}(w | h')) / (c(h) + T(h)).

A draft step must stay cheap on text the process has never seen (a cache
that only pays off on repeated text makes a benchmark lie). So loading keeps,
per seen context h (a "row" of the table), its backoff weight lambda(h) and
its few nonzero entries w(h, x), with q_k(. | h) = lambda(h) q_{k-1}(. | h') + w(h, .):
a row is two array operations per context length, built on first use along
its suffix chain and cached. The greedy step builds no row at all: training
stores argmax q of every row (`best`), so `argmax_next` is a dict lookup and
an index, on any text. `dense_table()` builds all rows at once with the same
operations, so the two agree bit for bit (169 MB for the shipped 219,970 rows).

    >>> m = NGramModel.fit([1, 2, 1, 2, 1, 2], vocab_size=3, order=2)
    >>> [round(float(v), 4) for v in m.probs([1])]   # unigram [1, 4, 4] / 9; (c + 1 * unigram) / (3 + 1)
    [0.0278, 0.1111, 0.8611]
    >>> m.argmax_next([1]), m.argmax_next([2])        # 2 always follows 1, and 1 follows 2
    (2, 1)
"""

import operator
from array import array

import numpy as np

from .distil import soft_counts


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


class NGramModel:
    """Interpolated n-gram over ids [0, V); contexts shorter than order - 1 are left-padded with `pad`.

    `table` is the read-only sequence of rows q(. | h), one per seen context h (order 0 first,
    then by length and key), each built on first use; `dense_table()` builds them all at once.
    `best`: argmax of every row (as `dense_table().argmax(1)`); found row by row when not given.
    """

    def __init__(self, keys, counts, vocab_size, order, pad=0, vocab=None, soft=None, best=None):
        self.V, self.order, self.pad, self.vocab = int(vocab_size), int(order), int(pad), vocab
        self.keys = np.asarray(keys, dtype=np.int64)      # n-grams as base-V numbers, oldest digit first
        self.counts = np.asarray(counts, dtype=np.int64)
        # soft = (keys h * V + w, lengths k, shares pbar(w | h)) of a distilled model, or None
        self.soft = None if soft is None else tuple(np.asarray(a, t) for a, t in zip(soft, (np.int64, np.int8, float)))
        self._index_contexts()
        self.table = _Rows(self, 1.0)
        self._tempered, self._cdf = {}, {}                  # T -> {row: tempered row}; T -> {row: (CDF, row)}
        if best is not None:
            best = np.asarray(best)
            if best.shape != (self._size,) or not 0 <= best.min() <= best.max() < self.V:
                raise ValueError(f"best must hold {self._size} ids in [0, {self.V}), one per row; got shape "
                                 f"{best.shape}")
            best = best.tolist()                           # indexing a list is the cheapest lookup Python has
        self._best, self._argmax = best, {}                # _argmax: row -> argmax found lazily (no `best`)

    @classmethod
    def fit(cls, ids, vocab_size, order, pad=0, vocab=None):
        """Count every n-gram of `ids` (left-padded with order - 1 `pad` ids)."""
        V, n = int(vocab_size), int(order)
        x = np.concatenate([np.full(n - 1, pad, dtype=np.int64), np.asarray(ids, dtype=np.int64)])
        keys = np.zeros(len(x) - n + 1, dtype=np.int64)
        for i in range(n):  # key = x[t] V^(n-1) + ... + x[t+n-1]
            keys = keys * V + x[i: len(x) - n + 1 + i]
        keys, counts = np.unique(keys, return_counts=True)
        return cls(keys, counts, V, n, pad, vocab)

    @classmethod
    def distil(cls, ids, target_rows, vocab_size, order, pad=0, vocab=None, min_share=0.02):
        """The n-gram of `ids` with soft counts: target_rows[t] = p(. | ids[:t]), one row per id."""
        hard = cls.fit(ids, vocab_size, order, pad)
        return cls(hard.keys, hard.counts, vocab_size, order, pad, vocab,
                   soft_counts(ids, target_rows, vocab_size, order, pad, min_share))

    def _index_contexts(self):
        """Per row (a seen context h): the row of h', lambda(h), and the slice of its entries (ids, w)."""
        V, n = self.V, self.order
        unigram = np.bincount(self.keys % V, weights=self.counts, minlength=V)
        base = (unigram + 1.0) / (unigram.sum() + V)                     # order 0: add-one
        base.setflags(write=False)
        self._rows = {0: base}                                           # row -> read-only row, filled lazily
        if self.soft is not None:  # entries sorted by (length, key): each context's shares are one slice
            skeys, lengths, share = self.soft
            if np.any((lengths[1:] < lengths[:-1]) | ((lengths[1:] == lengths[:-1]) & (skeys[1:] < skeys[:-1]))):
                self.soft = skeys, lengths, share = tuple(a[np.lexsort((skeys, lengths))] for a in self.soft)
            bounds = np.searchsorted(lengths, np.arange(n + 1))
        ctx_keys, parent, lam, entry_row, entry_id, entry_w = [np.zeros(1, np.int64)], [[0]], [[0.0]], [], [], []
        levels, grams, gram_count = {}, self.keys, self.counts.astype(float)
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
            if self.soft is None:   # hard counts: the context's (next, count) pairs
                rows, ids, values = np.repeat(np.arange(len(uniq)), size), pairs % V, pair_count
            else:
                block = skeys[bounds[k]:bounds[k + 1]]
                rows = np.minimum(np.searchsorted(uniq, block // V), len(uniq) - 1)
                if np.any(uniq[rows] != block // V):
                    raise ValueError(f"soft counts of length {k} name a context the counts never saw")
                ids, values = block % V, share[bounds[k]:bounds[k + 1]]
            total = np.add.reduceat(pair_count, start)                     # c(h): sums of integer counts
            w, lam_k = level_weights(values, rows, total, size.astype(float), self.soft is not None)
            lam.append(lam_k)
            entry_row.append(rows + offset)
            entry_id.append(ids.astype(np.uint8 if V <= 256 else np.intp))
            entry_w.append(w)
            ctx_keys.append(uniq)
        self._size = sum(map(len, ctx_keys))
        rows = np.concatenate(entry_row) if entry_row else np.zeros(0, np.int64)
        self._ids = np.concatenate(entry_id) if entry_id else np.zeros(0, np.uint8)
        self._w = np.concatenate(entry_w) if entry_w else np.zeros(0)
        # Python arrays: the build walks a chain of rows one by one, and indexing one gives a plain int or
        # float, far faster than a NumPy scalar; at 8 bytes an entry, a fifth of a list's memory
        self._parent = array("q", np.concatenate(parent).astype(np.int64).tobytes())
        self._lambda = array("d", np.concatenate(lam).tobytes())
        ends = np.cumsum(np.bincount(rows, minlength=self._size))          # rows is sorted: one slice per row
        self._lo = array("q", np.concatenate([[0], ends[:-1]]).astype(np.int64).tobytes())
        self._hi = array("q", ends.astype(np.int64).tobytes())
        # Fast path, one lookup per draft step: the bytes of a full (order - 1)-id context -> its row.
        self._full = None
        if 1 < n and V <= 256:
            digits = (ctx_keys[-1][:, None] // V ** np.arange(n - 2, -1, -1) % V).astype(np.uint8)  # oldest first
            self._full = dict(zip(digits.view(f"V{n - 1}").ravel().tolist(), range(self._size - len(ctx_keys[-1]),
                                                                                   self._size)))
        # One dict per shorter context length (all lengths without the fast path): last k ids as base V -> row.
        offsets = np.cumsum([len(c) for c in ctx_keys])
        self._index = [dict(zip(keys.tolist(), range(off - len(keys), off)))
                       for keys, off in zip(ctx_keys[:n - 1] if self._full is not None else ctx_keys, offsets)]

    def row_index(self, context):
        """Row of the table for the longest seen suffix of `context` (at most order - 1 ids)."""
        n, V = self.order, self.V
        if self._full is not None and len(context) >= n - 1:
            # seen in full: the longest suffix (an array of wide ints has more bytes than any key: a miss)
            try:
                row = self._full.get(bytes(context[-(n - 1):]))
            except (ValueError, TypeError):   # an id outside [0, 256) in a list: checked below
                row = None
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
            row = self._index[k].get(key) if k < len(self._index) else self._full.get(bytes(int(t) for t in ctx))
            if row is None:
                break
            best = row
        return best

    def _row(self, r):
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

    def _tempered_row(self, r, t):
        """Row r tempered: q^(1/t) / sum q^(1/t), cached per (t, row); t = 1 is the row itself."""
        if t == 1.0:
            return self._row(r)
        rows = self._tempered.get(t)
        if rows is None:
            if not t > 0:
                raise ValueError(f"temperature must be > 0 here, got {t!r} (use argmax for greedy)")
            rows = self._tempered[t] = {}
        row = rows.get(r)
        if row is None:
            row = rows[r] = _temper(self._row(r)[None, :], t)[0]
            row.setflags(write=False)
        return row

    def tempered_table(self, temperature):
        """The rows with every q replaced by q^(1/T) / sum q^(1/T): a lazy sequence like `table`."""
        t = float(temperature)
        if not t > 0:
            raise ValueError(f"temperature must be > 0 here, got {temperature!r} (use argmax for greedy)")
        return self.table if t == 1.0 else _Rows(self, t)

    def propose(self, context, temperature, rng):
        """One draft step: (drafted id, the read-only row q it was drawn from).

        temperature 0: the argmax of q (ties: lowest id); else a draw from q tempered by T,
        by inverting the row's cached CDF with one uniform from `rng`.
        """
        row = self.row_index(context)
        if temperature == 0:
            return self._argmax_of(row), self._row(row)
        t = float(temperature)
        cdfs = self._cdf.get(t)
        if cdfs is None:
            cdfs = self._cdf[t] = {}
        hit = cdfs.get(row)
        if hit is None:
            q = self._tempered_row(row, t)
            hit = cdfs[row] = (np.cumsum(q), q)
        cdf, q = hit
        # side='right': the first j with cdf[j] > u * total, which has q[j] > 0
        return min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), self.V - 1), q

    def argmax_next(self, context):
        """The greedy draft step alone: argmax q(. | context), ties to the lowest id.

        With `best` (the shipped draft): one dict lookup and a list index, no row built.
        """
        n = self.order - 1
        if self._best is not None and self._full is not None and len(context) >= n:
            # row_index's fast path, inlined: this is the whole greedy draft step, once per drafted token
            try:
                row = self._full.get(bytes(context[-n:]))
            except (ValueError, TypeError):
                row = None
            if row is not None:
                return self._best[row]
        return self._argmax_of(self.row_index(context))

    def _argmax_of(self, r):
        if self._best is not None:
            return self._best[r]
        best = self._argmax.get(r)
        if best is None:
            best = self._argmax[r] = int(self._row(r).argmax())
        return best

    def probs(self, context, temperature=1.0):
        """q(. | context) as a read-only [V] row: the fast single-context path."""
        t = float(temperature)
        if not t > 0:
            raise ValueError(f"temperature must be > 0 here, got {temperature!r} (use argmax for greedy)")
        return self._tempered_row(self.row_index(context), t)

    def next_token_probs(self, contexts, temperature=1.0):
        """[B, V] next-token distributions, one row per context (a list of id lists)."""
        t = float(temperature)
        if not t > 0:
            raise ValueError(f"temperature must be > 0 here, got {temperature!r} (use argmax for greedy)")
        rows = [self._tempered_row(self.row_index(c), t) for c in contexts]
        return np.stack(rows) if rows else np.zeros((0, self.V))

    def dense_table(self, rows=None, temperature=1.0):
        """The rows built all at once, order by order, from the raw counts: [n_rows, V] float64.

        8 V bytes per row (169 MB for the shipped draft): the reference for tests, and what training
        takes `best` from. With `rows`, only those rows are returned, and only they and their suffixes built.
        """
        V, n = self.V, self.order
        nxt, full_ctx = self.keys % V, self.keys // V
        unigram = np.bincount(nxt, weights=self.counts, minlength=V)
        ctx_keys = [np.zeros(1, dtype=np.int64)] + [np.unique(full_ctx % V ** k) for k in range(1, n)]
        offsets = np.cumsum([0] + [len(k) for k in ctx_keys])
        want = np.arange(offsets[-1]) if rows is None else np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(want) and not 0 <= want.min() <= want.max() < offsets[-1]:
            raise IndexError(f"rows must be in [0, {offsets[-1]}), got {want.min()}..{want.max()}")
        # sel[k]: the rows of length-k contexts to build (positions among ctx_keys[k]): wanted ones and suffixes
        sel = [np.unique(want[(offsets[k] <= want) & (want < offsets[k + 1])] - offsets[k]) for k in range(n)]
        for k in range(n - 1, 0, -1):
            sel[k - 1] = np.union1d(sel[k - 1], np.searchsorted(ctx_keys[k - 1], ctx_keys[k][sel[k]] % V ** (k - 1)))
        sel[0] = np.zeros(1, dtype=np.int64)                      # the order-0 row is always built
        built = [((unigram + 1.0) / (unigram.sum() + V))[None, :]]  # order 0: add-one
        for k in range(1, n):  # context length k: the last k characters
            uniq = ctx_keys[k]
            local = np.full(len(uniq), -1)
            local[sel[k]] = np.arange(len(sel[k]))
            at_ctx = local[np.searchsorted(uniq, full_ctx % V ** k)]
            m = at_ctx >= 0
            c = np.zeros((len(sel[k]), V))
            np.add.at(c, (at_ctx[m], nxt[m]), self.counts[m])
            parent = np.searchsorted(sel[k - 1], np.searchsorted(ctx_keys[k - 1], uniq[sel[k]] % V ** (k - 1)))
            total, distinct = c.sum(1), (c > 0).sum(1).astype(float)   # sums of integer counts: exact
            r, x = np.nonzero(c)                                   # per row by id: the lazy build's entry order
            values = c[r, x]
            if self.soft is not None:  # distilled: the soft shares of this length replace the counts
                skeys, lengths, share = self.soft
                at = lengths == k
                r = local[np.searchsorted(uniq, skeys[at] // V)]
                x, values = (skeys[at] % V)[r >= 0], share[at][r >= 0]
                r = r[r >= 0]
            w, lam = level_weights(values, r, total, distinct, self.soft is not None)
            table = lam[:, None] * built[-1][parent]
            table[r, x] += w
            built.append(table)
        table = np.concatenate(built)
        order = np.concatenate([offsets[k] + sel[k] for k in range(n)])   # the row each built line is
        table = table[np.searchsorted(order, want)]
        t = float(temperature)
        return table if t == 1.0 else _temper(table, t)

    def encode(self, text):
        return self.vocab.encode(text)

    def decode(self, ids):
        return self.vocab.decode(ids)


def _temper(rows, t):
    """q^(1/t) / sum q^(1/t) for each row of [B, V] `rows`, in log space."""
    logq = np.log(rows) / t
    w = np.exp(logq - logq.max(1, keepdims=True))
    return w / w.sum(1, keepdims=True)


class _Rows:
    """`model.table` (or a tempered one): a read-only sequence of rows, each built on first use."""

    def __init__(self, model, temperature):
        self._model, self._t = model, temperature

    def __len__(self):
        return self._model._size

    def __getitem__(self, i):
        if isinstance(i, (list, tuple, np.ndarray)):
            return np.stack([self[j] for j in i]) if len(i) else np.zeros((0, self._model.V))
        i = operator.index(i)
        if not -len(self) <= i < len(self):
            raise IndexError(f"row {i} is outside the {len(self)} rows")
        return self._model._tempered_row(i % len(self), self._t)
