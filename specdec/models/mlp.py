"""The target p: a Bengio-style character MLP in NumPy, with hand-written backprop.

The last `context` ids are embedded, concatenated, passed through one wide
tanh layer and projected to logits (Bengio et al. 2003, without the skip):

    x = concat(E[c_1], ..., E[c_n])     # [B, n * d]
    h = tanh(x W1 + b1)                 # [B, H]
    z = h W2 + b2                       # [B, V]  logits; p = softmax(z / T)

`loss_and_grads` is the training path (mean cross-entropy and its exact
gradient, checked against finite differences in the tests). Inference folds
the embedding into the first layer: x W1 = sum_j E[c_j] W1_j = sum_j F_j[c_j]
with F_j = E W1_j precomputed, the same function with fewer flops. A call
scoring n positions costs about F + n P: a fixed part F (the Python and NumPy
work around the arithmetic) and, per position, a pass over its `context` rows
of the folded table and over the whole of W2 (lesson 09 measures both).

    >>> params = init_params(vocab_size=5, context=3, embed=2, hidden=4, seed=0)
    >>> loss, grads = loss_and_grads(params, np.array([[1, 2, 3]]), np.array([4]))
    >>> round(float(loss), 1), sorted(grads) == sorted(params)   # near log 5 = 1.609 at init
    (1.6, True)
"""

import numpy as np

from ..generation.rows import tempered_probs

PARAM_NAMES = ("E", "W1", "b1", "W2", "b2")


def init_params(vocab_size, context, embed, hidden, seed=0):
    """Float32 parameters: N(0, 1) embeddings, 1/sqrt(fan_in) first layer, a small head."""
    rng = np.random.default_rng(seed)
    fan_in = context * embed
    return {
        "E": rng.standard_normal((vocab_size, embed)).astype(np.float32),
        "W1": (rng.standard_normal((fan_in, hidden)) / np.sqrt(fan_in)).astype(np.float32),
        "b1": np.zeros(hidden, np.float32),
        # small head: the untrained model starts near uniform, loss ~ log V
        "W2": (rng.standard_normal((hidden, vocab_size)) * 0.01).astype(np.float32),
        "b2": np.zeros(vocab_size, np.float32),
    }


def loss_and_grads(params, X, y):
    """Mean cross-entropy of targets y [B] given contexts X [B, n], and d loss / d every parameter."""
    E, W1, b1, W2, b2 = (params[k] for k in PARAM_NAMES)
    B = len(X)
    x = E[X].reshape(B, -1)                          # [B, n*d]
    h = np.tanh(x @ W1 + b1)                         # [B, H]
    z = h @ W2 + b2                                  # [B, V]
    z = z - z.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    loss = -logp[np.arange(B), y].mean()

    dz = np.exp(logp)                                # softmax - onehot, averaged over the batch
    dz[np.arange(B), y] -= 1.0
    dz /= B
    dh = dz @ W2.T
    da = dh * (1.0 - h * h)                          # tanh' = 1 - tanh^2
    dx = (da @ W1.T).reshape(B, X.shape[1], -1)      # [B, n, d]
    dE = np.zeros_like(E)
    np.add.at(dE, X, dx)                             # an id used twice gets both gradients
    grads = {"E": dE, "W1": x.T @ da, "b1": da.sum(0), "W2": h.T @ dz, "b2": dz.sum(0)}
    return loss, grads


class MLPModel:
    """The trained target: next-token probabilities for contexts, or for every position after a prefix."""

    def __init__(self, params, context, pad=0, vocab=None):
        self.params = {k: np.asarray(params[k], np.float32) for k in PARAM_NAMES}
        self.context, self.pad, self.vocab = int(context), int(pad), vocab
        E, W1 = self.params["E"], self.params["W1"]
        self.V, d = E.shape
        H = W1.shape[1]
        # F[j * V + c] = E[c] @ W1[j*d:(j+1)*d]: one row per (window slot, character)
        self._folded = np.einsum("vd,jdh->jvh", E, W1.reshape(self.context, d, H)).reshape(-1, H)
        self._folded = np.ascontiguousarray(self._folded, dtype=np.float32)
        self._slot = np.arange(self.context) * self.V
        self._offsets = {}
        self._b1 = self.params["b1"]
        self._W2 = self.params["W2"]                             # float32: 0.33 MB, stays in a 1 MB L2 cache
        self._b2 = self.params["b2"].astype(np.float64)

    def windows(self, ids, start):
        """[len(ids) - start + 1, n] context windows predicting positions start..len(ids)."""
        n = self.context
        tail = ids[max(0, start - n):]                           # only the ids these windows see
        padded = np.array([self.pad] * (n - min(start, n)) + list(tail), np.int64)
        rows = len(padded) - n + 1
        if rows not in self._offsets:  # window r is padded[r: r + n]; one cached index per row count
            self._offsets[rows] = np.arange(rows)[:, None] + np.arange(n)
        return padded[self._offsets[rows]]

    def logits(self, windows):
        """[B, V] float64 logits for [B, n] windows of ids."""
        a = self._folded[windows + self._slot].sum(1)            # [B, n, H] -> [B, H]
        h = np.tanh(a + self._b1)
        # Subtle: one matrix-vector product per window ([B, 1, H] @ [H, V], a stacked matmul), never a
        # matrix-matrix product. Each row is then computed exactly as when its window is scored alone,
        # so greedy speculative decoding reproduces greedy decoding bit for bit; and OpenBLAS's
        # matrix-matrix kernel costs 4-7x more for a few rows here than the separate products do.
        return (h[:, None, :] @ self._W2)[:, 0] + self._b2        # [B, V] float64

    def _probs(self, windows, temperature):
        if not temperature > 0:   # before the logits are computed
            raise ValueError(f"temperature must be > 0 here, got {temperature!r} (use argmax for greedy)")
        return tempered_probs(self.logits(windows), temperature)

    def probs_for_positions(self, ids, start, temperature=1.0):
        """p(. | ids[:t]) for t = start..len(ids), in one call: [len(ids) - start + 1, V].

        With ids = prefix + gamma drafted ids and start = len(prefix), these are the
        gamma + 1 rows a verification step needs.
        """
        if not 0 <= start <= len(ids):
            raise ValueError(f"start is {start}, outside [0, len(ids)] = [0, {len(ids)}]")
        return self._probs(self.windows(ids, start), temperature)

    def probs_for_tree(self, ids, parents, tokens, temperature=1.0):
        """p(. | ids) and p(. | ids + the path to node i) for every node of a draft tree, in one call.

        Node i holds tokens[i] under node parents[i] (-1: under the root, the context `ids`),
        an earlier node. Returns [len(tokens) + 1, V]: row 0 for the root, row i + 1 for node i.
        A chain (parents -1, 0, 1, ...) gives the rows of probs_for_positions.
        """
        if len(parents) != len(tokens):
            raise ValueError(f"len(parents) is {len(parents)} but len(tokens) is {len(tokens)}: one parent per node")
        win = np.empty((len(tokens) + 1, self.context), np.int64)   # [nodes + 1, n]
        win[0] = self.windows(ids, len(ids))[0]
        for i, (parent, token) in enumerate(zip(parents, tokens)):
            if not -1 <= parent < i or not 0 <= token < self.V:
                raise ValueError(f"node {i}: parent {parent} must be in [-1, {i}) and token {token} in [0, {self.V})")
            win[i + 1, :-1] = win[parent + 1, 1:]                   # the parent's window, shifted by one id
            win[i + 1, -1] = token
        return self._probs(win, temperature)

    def next_token_probs(self, contexts, temperature=1.0):
        """[B, V] next-token distributions, one row per context (a list of id lists)."""
        windows = np.stack([self.windows(c, len(c))[0] for c in contexts])
        return self._probs(windows, temperature)

    def encode(self, text):
        return self.vocab.encode(text)

    def decode(self, ids):
        return self.vocab.decode(ids)
