"""The shipped draft q: the n-gram's rows cut to their k likeliest ids, so a sampled step costs a greedy one.

Speculative sampling is lossless for ANY draft distribution, provided the
verifier is given the row each draft was drawn from (lesson 03's proof never
asks q to be good, only to be the q that proposed). So a draft may choose a q
that is cheap to draw from. `TopKDraft` keeps, for every row of the n-gram
(`ngram.py`), its k likeliest ids (ties: the lower id) with their q values,
renormalised:

    q_k(x | h) = q(x | h) / sum of the k largest q(. | h)   if x is among them, else 0

A draft step is then what the greedy step is (find the context's row: one
dict lookup) plus one uniform and a binary search over k cumulative sums; no
row of V numbers is built. The verifier gets a `SparseRow`: it reads q(x) for
the drafted x at once, and builds the dense row only when the residual
max(0, p - q) needs it, once per target call. A tempered draft q_k^(1/T) is
k numbers per row too: computed for all rows at once on first use of a T.

What the cut costs: the mass beyond the k likeliest ids (2% at k = 8 for the
shipped rows), and with it a little acceptance; `train_draft.py` prints both
drafts' acceptance on held-out text. Greedy drafting is unchanged: the argmax
of q_k is the argmax of q.

    >>> from specdec.models import load_pretrained
    >>> draft, _ = load_pretrained()
    >>> x, q = draft.propose(draft.encode("The "), 1.0, np.random.default_rng(0))
    >>> 0 < q[x] <= 1, int(np.count_nonzero(np.asarray(q))), round(float(np.asarray(q).sum()), 12)
    (True, 8, 1.0)
"""

import operator
from array import array
from bisect import bisect_right

import numpy as np

UNIFORMS_PER_DRAW = 64     # uniforms taken from a Generator at once (one NumPy call each 64 draft steps)


def top_entries(ngram, k, chunk=20_000):
    """(ids [rows, k] uint8, q [rows, k] float16): each row's k likeliest ids by q (ties: lower id) and their q."""
    n_rows = len(ngram.table)
    ids, q = np.empty((n_rows, k), np.uint8), np.empty((n_rows, k), np.float16)
    for a in range(0, n_rows, chunk):
        rows = ngram.dense_table(np.arange(a, min(a + chunk, n_rows)))
        top = np.argsort(-rows, axis=1, kind="stable")[:, :k]
        ids[a:a + len(rows)], q[a:a + len(rows)] = top, np.take_along_axis(rows, top, 1)
    return ids, q


class SparseRow:
    """A draft row q over V ids with k nonzero entries, as the verification rules read it.

    `row[x]` is q(x) (0.0 off the k ids); NumPy sees the dense [V] row (`np.asarray(row)`),
    built on demand: `p - row`, `np.maximum(p - row, 0)` and the rest work as on an array.
    """

    __slots__ = ("_table", "_a")

    def __init__(self, table, a):
        # table: TopKDraft's (cumulative sums, q flat, q [rows, k], ids as bytes, k, V); a: the row's first entry
        self._table, self._a = table, a

    def __getitem__(self, x):
        x = operator.index(x)
        _, q, _, ids, k, _ = self._table
        j = ids.find(x, self._a, self._a + k) if 0 <= x < 256 else -1
        return q[j] if j >= 0 else 0.0

    def __array__(self, dtype=None, copy=None):
        _, _, q, ids, k, V = self._table
        dense = np.zeros(V)
        dense[np.frombuffer(ids, np.uint8, k, self._a)] = q[self._a // k]
        return dense if dtype is None else dense.astype(dtype)

    def entries(self):
        """(ids, q): the row's k ids, likeliest first (ties: the lower id), and their q."""
        _, _, q, ids, k, _ = self._table
        return np.frombuffer(ids, np.uint8, k, self._a), q[self._a // k]

    def __len__(self):
        return self._table[5]

    def __repr__(self):
        return f"SparseRow({np.asarray(self).round(4).tolist()})"


class TopKDraft:
    """The Draft interface (`generation.interface.Draft`) over `ngram`'s rows cut to k ids.

    top_ids [rows, k]: each row's ids, likeliest first; top_q [rows, k]: their q (renormalised here; a 0, from float16
    rounding, is an id never drawn).
    `ngram` finds a context's row (`row_index`, and the greedy step `argmax_next`); its full rows
    stay available as `ngram.table`.
    """

    def __init__(self, ngram, top_ids, top_q):
        top_ids, q = np.asarray(top_ids), np.asarray(top_q, np.float64)
        if top_ids.ndim != 2 or top_ids.shape != q.shape or len(top_ids) != len(ngram.table):
            raise ValueError(f"top_ids and top_q must both be [{len(ngram.table)}, k], one row per n-gram row; "
                             f"got {top_ids.shape} and {q.shape}")
        if not (0 <= top_ids.min() and top_ids.max() < min(ngram.V, 256)) or not (q >= 0).all() \
                or not (q[:, 0] > 0).all():
            raise ValueError(f"top_ids must hold ids in [0, {ngram.V}), top_q values >= 0 with the first > 0")
        self.ngram, self.V, self.k = ngram, ngram.V, top_ids.shape[1]
        self.vocab = ngram.vocab
        self._ids = top_ids.astype(np.uint8).tobytes()      # row r's ids: _ids[r k:(r + 1) k]
        self._q1 = q / q.sum(1, keepdims=True)
        self._tables = {}                                    # T -> (cumulative sums, q, q [rows, k])
        self._buffer, self._rng = [], None                   # uniforms drawn ahead from self._rng
        self._full, self._n = ngram._full, ngram.order - 1  # the greedy step's one-lookup fast path
        self._table(1.0)

    def _row(self, context):
        ngram, n = self.ngram, self.ngram.order - 1
        if ngram._full is not None and len(context) >= n:    # argmax_next's fast path: one dict lookup
            try:
                row = ngram._full.get(bytes(context[-n:]))
            except (ValueError, TypeError):
                row = None
            if row is not None:
                return row
        return ngram.row_index(context)

    def _table(self, t):
        """(cumulative sums, q) flat as array("d"), q [rows, k], ids, k, V: q_k^(1/T) renormalised, all rows at once."""
        table = self._tables.get(t)
        if table is None:
            q = self._q1 if t == 1.0 else np.power(self._q1, 1.0 / t)
            q = q / q.sum(1, keepdims=True)
            c = np.cumsum(q, axis=1)
            c[:, -1] = 1.0                                   # a uniform in [0, 1) always lands in the row
            table = self._tables[t] = (array("d", c.ravel().tobytes()), array("d", q.ravel().tobytes()), q, self._ids,
                                       self.k, self.V)
        return table

    def sparse_row(self, row, temperature=1.0):
        """Row `row` of q_k at temperature T > 0 as a SparseRow."""
        return SparseRow(self._table(float(temperature)), row * self.k)

    def propose(self, context, temperature, rng):
        """One draft step: (drafted id, its SparseRow q_k(. | context) at T).

        T = 0: the argmax of q (the greedy step; the row returned is q_k at T = 1). T > 0: a draw from
        q_k^(1/T) by inverting the row's cumulative sums at a uniform of rng (taken 64 at a time).
        """
        # _row and _uniform inlined: this is the whole sampled draft step, once per drafted token
        row = None
        if self._full is not None and len(context) >= self._n:
            try:
                row = self._full.get(bytes(context[-self._n:]))
            except (ValueError, TypeError):
                pass
        if row is None:
            row = self.ngram.row_index(context)
        if temperature == 0:
            return self.ngram._argmax_of(row), SparseRow(self._table(1.0), row * self.k)
        table = self._tables.get(temperature) or self._table(float(temperature))
        buffer = self._buffer
        if rng is not self._rng or not buffer:
            if rng is not self._rng:
                self._rng = rng
            buffer = self._buffer = rng.random(UNIFORMS_PER_DRAW).tolist()
        a = row * self.k
        j = bisect_right(table[0], buffer.pop(), a, a + self.k)
        return self._ids[j], SparseRow(table, a)

    def row_of(self, context, temperature=1.0):
        """q_k(. | context) at T > 0 as a SparseRow: a tree's node row without building a dense row."""
        return SparseRow(self._table(float(temperature)), self._row(context) * self.k)

    def argmax_next(self, context):
        """The greedy draft step: argmax q(. | context), the same id as the uncut n-gram's."""
        return self.ngram.argmax_next(context)

    def probs(self, context, temperature=1.0):
        """q_k(. | context) at T > 0 as a dense [V] row."""
        return self.next_token_probs([context], temperature)[0]

    def next_token_probs(self, contexts, temperature=1.0):
        """[B, V] dense rows q_k(. | context) at T > 0, one per context."""
        t = float(temperature)
        if not t > 0:
            raise ValueError(f"temperature must be > 0 here, got {temperature!r} (use argmax for greedy)")
        rows = np.array([self._row(c) for c in contexts], np.int64)
        out = np.zeros((len(rows), self.V))
        ids = np.frombuffer(self._ids, np.uint8).reshape(-1, self.k)
        np.put_along_axis(out, ids[rows].astype(np.int64), self._table(t)[2][rows], 1)
        return out

    def encode(self, text):
        return self.ngram.encode(text)

    def decode(self, ids):
        return self.ngram.decode(ids)
