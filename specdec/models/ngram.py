"""The draft q: a character n-gram model with Witten-Bell interpolation.

Counting is the whole of training. For a context h (the last k characters)
with c(h, w) counts and T(h) distinct followers,

    q_k(w | h) = (c(h, w) + T(h) q_{k-1}(w | h')) / (c(h) + T(h))

where h' drops the oldest character; the order-0 base is add-one smoothed
unigrams, so every q(w) > 0 (a draft never proposes a token it gave
probability 0, and p/q is always defined). Every row for every seen
context is precomputed into one table: a draft step is a dict lookup.

    >>> m = NGramModel.fit([1, 2, 1, 2, 1, 2], vocab_size=3, order=2)
    >>> [round(float(v), 4) for v in m.probs([1])]   # unigram [1, 4, 4] / 9; (c + 1 * unigram) / (3 + 1)
    [0.0278, 0.1111, 0.8611]
"""

import numpy as np


class NGramModel:
    """Interpolated n-gram over ids [0, V); contexts shorter than order - 1 are left-padded with `pad`."""

    def __init__(self, keys, counts, vocab_size, order, pad=0, vocab=None):
        self.V, self.order, self.pad, self.vocab = int(vocab_size), int(order), int(pad), vocab
        self.keys = np.asarray(keys, dtype=np.int64)      # n-grams as base-V numbers, oldest digit first
        self.counts = np.asarray(counts, dtype=np.int64)
        self._build()
        self._tempered = {1.0: self.table}
        self._cdf, self._argmax = {}, None  # filled on first use by `propose`

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

    def _build(self):
        V, n = self.V, self.order
        nxt, full_ctx = self.keys % V, self.keys // V
        unigram = np.bincount(nxt, weights=self.counts, minlength=V)
        rows = [((unigram + 1.0) / (unigram.sum() + V))[None, :]]  # order 0: add-one
        ctx_keys = [np.zeros(1, dtype=np.int64)]
        for k in range(1, n):  # context length k: the last k characters
            ctx = full_ctx % V ** k
            uniq, inv = np.unique(ctx, return_inverse=True)
            c = np.zeros((len(uniq), V))
            np.add.at(c, (inv, nxt), self.counts)
            parent = np.searchsorted(ctx_keys[-1], uniq % V ** (k - 1))  # every suffix was seen too
            distinct = (c > 0).sum(1, keepdims=True)
            total = c.sum(1, keepdims=True)
            rows.append((c + distinct * rows[-1][parent]) / (total + distinct))
            ctx_keys.append(uniq)
        offsets = np.cumsum([0] + [len(k) for k in ctx_keys])
        self.table = np.concatenate(rows).astype(np.float64)  # [n_contexts, V]
        self.table.setflags(write=False)
        # One dict per context length: base-V key of the last k ids -> row of the table.
        self._index = [dict(zip(keys.tolist(), range(off, off + len(keys))))
                       for keys, off in zip(ctx_keys, offsets)]

    def row_index(self, context):
        """Row of the table for the longest seen suffix of `context` (at most order - 1 ids)."""
        n, V = self.order, self.V
        ctx = list(context[-(n - 1):]) if n > 1 else []
        ctx = [self.pad] * (n - 1 - len(ctx)) + ctx
        best, key, scale = 0, 0, 1
        for k in range(1, n):  # grow the suffix one id at a time; stop at the first unseen one
            key += int(ctx[-k]) * scale
            scale *= V
            row = self._index[k].get(key)
            if row is None:
                break
            best = row
        return best

    def tempered_table(self, temperature):
        """The table with every row q replaced by q^(1/T) / sum q^(1/T) (cached per T)."""
        t = float(temperature)
        if not t > 0:
            raise ValueError(f"temperature must be > 0 here, got {temperature!r} (use argmax for greedy)")
        if t not in self._tempered:
            logq = np.log(self.table) / t
            w = np.exp(logq - logq.max(1, keepdims=True))
            table = w / w.sum(1, keepdims=True)
            table.setflags(write=False)
            self._tempered[t] = table
        return self._tempered[t]

    def propose(self, context, temperature, rng):
        """One draft step: (drafted id, the read-only row q it was drawn from).

        temperature 0: the argmax of q (ties: lowest id); else a draw from q tempered by T,
        by inverting a cached CDF with one uniform from `rng`.
        """
        row = self.row_index(context)
        if temperature == 0:
            if self._argmax is None:
                self._argmax = self.table.argmax(1).tolist()
            return self._argmax[row], self.table[row]
        t = float(temperature)
        if t not in self._cdf:
            self._cdf[t] = np.cumsum(self.tempered_table(t), axis=1)
        cdf = self._cdf[t][row]
        # side='right': the first j with cdf[j] > u * total, which has q[j] > 0
        x = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), self.V - 1)
        return x, self._tempered[t][row]

    def probs(self, context, temperature=1.0):
        """q(. | context) as a read-only [V] row: the fast single-context path."""
        return self.tempered_table(temperature)[self.row_index(context)]

    def next_token_probs(self, contexts, temperature=1.0):
        """[B, V] next-token distributions, one row per context (a list of id lists)."""
        table = self.tempered_table(temperature)
        return table[[self.row_index(c) for c in contexts]]

    def encode(self, text):
        return self.vocab.encode(text)

    def decode(self, ids):
        return self.vocab.decode(ids)
