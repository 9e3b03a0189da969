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
that only pays off on repeated text makes a benchmark lie). So the rows are
kept compactly and each is built on first use (`ngram_rows.py`: a backoff
weight and a few entries per seen context). The greedy step builds no row at
all: training stores argmax q of every row (`best`), so `argmax_next` is a
dict lookup and an index, on any text. `dense_table()` builds all rows at once
from the raw counts, the reference the lazy rows equal bit for bit (169 MB for
the shipped 219,970 rows).

    >>> m = NGramModel.fit([1, 2, 1, 2, 1, 2], vocab_size=3, order=2)
    >>> [round(float(v), 4) for v in m.probs([1])]   # unigram [1, 4, 4] / 9; (c + 1 * unigram) / (3 + 1)
    [0.0278, 0.1111, 0.8611]
    >>> m.argmax_next([1]), m.argmax_next([2])        # 2 always follows 1, and 1 follows 2
    (2, 1)
"""

import numpy as np

from .distil import soft_counts
from .ngram_rows import CompactRows, RowSequence, level_weights, temper


class NGramModel:
    """Interpolated n-gram over ids [0, V); contexts shorter than order - 1 are left-padded with `pad`.

    `table` is the read-only sequence of rows q(. | h), one per seen context h (order 0 first,
    then by length and key), each built on first use; `dense_table()` builds them all at once.
    `best`: argmax of every row (as `dense_table().argmax(1)`); found row by row when not given.
    `row_index(context)`: the row of the longest seen suffix of `context` (at most order - 1 ids).
    """

    def __init__(self, keys, counts, vocab_size, order, pad=0, vocab=None, soft=None, best=None):
        self.V, self.order, self.pad, self.vocab = int(vocab_size), int(order), int(pad), vocab
        self.keys = np.asarray(keys, dtype=np.int64)      # n-grams as base-V numbers, oldest digit first
        self.counts = np.asarray(counts, dtype=np.int64)
        # soft = (keys h * V + w, lengths k, shares pbar(w | h)) of a distilled model, or None
        self.soft = None if soft is None else tuple(np.asarray(a, t) for a, t in zip(soft, (np.int64, np.int8, float)))
        self._store = CompactRows(self.keys, self.counts, self.V, self.order, self.pad, self.soft)
        self.soft, self._size = self._store.soft, self._store.size   # soft sorted by (length, key)
        self._full = self._store.full                       # argmax_next's one lookup, without an attribute hop
        self._row, self._tempered_row = self._store.row, self._store.tempered_row
        self.row_index = self._store.row_index              # context -> row of its longest seen suffix
        self.table = RowSequence(self._store, 1.0)
        self._cdf = {}                                      # T -> {row: (CDF, row)}
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

    def tempered_table(self, temperature):
        """The rows with every q replaced by q^(1/T) / sum q^(1/T): a lazy sequence like `table`."""
        t = float(temperature)
        if not t > 0:
            raise ValueError(f"temperature must be > 0 here, got {temperature!r} (use argmax for greedy)")
        return self.table if t == 1.0 else RowSequence(self._store, t)

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
        return table if t == 1.0 else temper(table, t)

    def encode(self, text):
        return self.vocab.encode(text)

    def decode(self, ids):
        return self.vocab.decode(ids)
