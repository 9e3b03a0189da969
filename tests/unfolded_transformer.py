"""The transformer target as first shipped (commit b3bc1d4), one NumPy call per formula term: a frozen reference.

A helper module, not a test file (`from unfolded_transformer import load`). specdec.models.transformer now
folds the pass (a centred stream, LayerNorm folded into the products, one reduction per norm) and fills the
next window's cache as the text goes; tests/library/test_transformer.py holds its rows to this module's, on the
shipped weights, so that lessons and the draft distilled from these rows keep them to the last bit that
matters. Do not edit: it is the reference, not the model.
"""


import numpy as np

from specdec.generation.rows import tempered_probs
from specdec.models.transformer import LAYER_NAMES, common_prefix, gelu, param_names, window_start

# ---------------------------------------------------------------- the forward pass, in small pure functions
def layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)                             # [n, 1]
    var = ((x - mean) ** 2).mean(-1, keepdims=True)              # [n, 1]
    return (x - mean) / np.sqrt(var + eps) * g + b               # [n, d]


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention(q, k, v, bias):
    """Scaled dot-product attention: q [h, n, hd] over k, v [h, m, hd]; bias [n, m] is 0 (may see) or -inf."""
    scores = q @ k.transpose(0, 2, 1) * q.shape[-1] ** -0.5 + bias    # [h, n, m] (a Python float: stays float32)
    return softmax(scores) @ v                                        # [h, n, hd]


def mlp(x, p):
    return gelu(x @ p["mlp.w_fc"] + p["mlp.b_fc"]) @ p["mlp.w_out"] + p["mlp.b_out"]   # [n, 4d] -> [n, d]


def block(x, p, k_cache, v_cache, first, bias, n_head):
    """One pre-LayerNorm block on n new positions x [n, d], stored in cache slots first..first + n - 1.

    k_cache, v_cache [h, slots, hd] hold this layer's keys and values; the new ones are written
    into them, then the new positions attend over slots 0..first + n - 1 as `bias` [n, first + n] allows.
    """
    n, d = x.shape
    qkv = layer_norm(x, p["ln1.g"], p["ln1.b"]) @ p["attn.w_qkv"] + p["attn.b_qkv"]   # [n, 3d]
    q, k, v = qkv.reshape(n, 3, n_head, d // n_head).transpose(1, 2, 0, 3)          # 3 x [h, n, hd]
    k_cache[:, first:first + n] = k
    v_cache[:, first:first + n] = v
    m = first + n
    a = attention(q, k_cache[:, :m], v_cache[:, :m], bias)                             # [h, n, hd]
    x = x + a.transpose(1, 0, 2).reshape(n, d) @ p["attn.w_proj"] + p["attn.b_proj"]  # [n, d]
    return x + mlp(layer_norm(x, p["ln2.g"], p["ln2.b"]), p)                           # [n, d]


def forward(params, layers, tokens, positions, k_cache, v_cache, first, bias, n_head):
    """Logits [n, V] of n new tokens at `positions`; their keys and values go to cache slots first.. first + n - 1.

    k_cache, v_cache: [n_layer, h, slots, hd]; bias [n, first + n] (0 or -inf) says which slots each new token sees.
    """
    x = params["wte"][tokens] + params["wpe"][positions]                               # [n, d]
    for i, p in enumerate(layers):
        x = block(x, p, k_cache[i], v_cache[i], first, bias, n_head)
    return layer_norm(x, params["ln_f.g"], params["ln_f.b"]) @ params["head.w"] + params["head.b"]   # [n, V]


# ---------------------------------------------------------------- the model and its cache
class TransformerModel:
    """The transformer target: rows p(. | prefix) for a chain or a tree of positions, served from a KV cache."""

    def __init__(self, params, n_head, context=None, hop=None, start=0, vocab=None):
        self.n_layer = sum(1 for k in params if k.endswith(".ln1.g"))
        self.params = {k: np.asarray(params[k], np.float32) for k in param_names(self.n_layer)}
        self.layers = [{name: self.params[f"h{i}.{name}"] for name in LAYER_NAMES} for i in range(self.n_layer)]
        self.V, self.d = self.params["wte"].shape
        self.n_head = int(n_head)
        if self.d % self.n_head:
            raise ValueError(f"d = {self.d} is not a multiple of n_head = {self.n_head}")
        positions = len(self.params["wpe"])
        self.context = positions - 1 if context is None else int(context)   # characters after the start symbol
        if not 1 <= self.context <= positions - 1:
            raise ValueError(f"context is {self.context}; the weights have {positions} positions (at most "
                             f"{positions - 1} characters after the start symbol)")
        self.hop = max(1, self.context // 2) if hop is None else int(hop)
        if not 1 <= self.hop <= self.context:
            raise ValueError(f"hop is {self.hop}, outside [1, context = {self.context}]")
        self.start, self.vocab = int(start), vocab
        # -inf above the diagonal: row i (a slot) may see slots 0..i. A chain's mask is a view into it.
        n = self.context + 1
        self._causal = np.triu(np.full((n, n), -np.inf, np.float32), 1)
        self._allocate(n + 64)                   # the window's slots, and room after them for a tree's nodes
        self.reset()

    def _arrays(self, slots=None):
        """New (k, v, logits) arrays for a cache of `slots` slots (default: the current cache's)."""
        slots = self._k.shape[2] if slots is None else slots
        shape = (self.n_layer, self.n_head, slots, self.d // self.n_head)
        return np.zeros(shape, np.float32), np.zeros(shape, np.float32), np.zeros((slots, self.V), np.float32)

    def _allocate(self, slots):
        """(Re)allocate the cache's arrays for `slots` slots, keeping what the cache holds."""
        k, v, logits = self._arrays(slots)      # [n_layer, h, slots, hd] twice; the last layer's logits per slot
        if hasattr(self, "_tokens"):                  # a bigger tree than ever before: grow, once
            n = len(self._tokens)
            k[:, :, :n], v[:, :, :n], logits[:n] = self._k[:, :, :n], self._v[:, :, :n], self._logits[:n]
        self._k, self._v, self._logits = k, v, logits

    def fresh(self):
        """The same weights (shared, not copied) with an empty cache."""
        return TransformerModel(self.params, self.n_head, self.context, self.hop, self.start, self.vocab)

    # ------------------------------------------------------------ the cache, for the lesson
    @property
    def cache_start(self):
        """The text index of the window the cache holds (its slot 1; slot 0 is the start symbol)."""
        return self._window

    @property
    def cache_length(self):
        """How many text ids the cache holds: ids[cache_start : cache_start + cache_length]."""
        return max(0, len(self._tokens) - 1)

    @property
    def cached_ids(self):
        return [int(t) for t in self._tokens[1:]]

    def reset(self):
        """Empty the cache (both windows)."""
        self._window, self._tokens, self._spare = 0, [], None

    def keep(self, n):
        """Keep the cache of ids[:n] and drop every position after it (n in text positions, from the start)."""
        if n < 0:
            raise ValueError(f"n is {n}, it must be >= 0")
        if self._spare is not None:              # the other window's cache: the same cut
            window, tokens = self._spare[0], self._spare[1]
            if n < window:
                self._spare = None
            else:
                del tokens[n - window + 1:]
        if n < self._window:
            spare = self._spare
            self.reset()
            if spare is not None:                # the earlier window, cut to n, becomes the cache
                self._swap(spare)
                self._spare = None
        else:
            del self._tokens[n - self._window + 1:]

    def _swap(self, state):
        """Make `state` (window, tokens, k, v, logits) the cache; return the cache it replaces, in the same form."""
        old = self._window, self._tokens, self._k, self._v, self._logits
        self._window, self._tokens, self._k, self._v, self._logits = state
        return old

    def rollback(self, k):
        """Drop the last k ids the cache holds (all of them if k >= cache_length)."""
        if k < 0:
            raise ValueError(f"k is {k}, it must be >= 0")
        self.keep(max(self._window, self._window + self.cache_length - k))

    def window_start(self, t):
        """s: p(. | ids[:t]) is computed from the window ids[s:t] (module-level `window_start`)."""
        return window_start(t, self.context, self.hop)

    # ------------------------------------------------------------ filling the cache
    def _extend(self, ids, window, end, tree=None):
        """Make the cache hold [start] + ids[window:end], computing only what it lacks, in ONE forward pass.

        tree = (parents, tokens, depth, ancestors) appends a tree's nodes to that same pass, after the
        chain; their logits are returned, their keys and values are not kept.
        """
        want = [self.start] + ids[window:end]
        if window != self._window:
            # The window moved. Two windows are kept, the one left and the one entered: a verification step
            # whose rows straddle a hop (some in each window), followed by a rejection, comes back to the window
            # it left, and with one cache each such step would recompute a whole window twice.
            if self._spare is not None and self._spare[0] == window:
                self._spare = self._swap(self._spare)
            else:
                spare = self._spare
                self._spare = self._swap((window, [], *(spare[2:] if spare is not None else self._arrays())))
        m = common_prefix(self._tokens, want)
        del self._tokens[m:]                     # rollback: drop the cached tail that differs
        new = np.asarray(want[m:], np.int64)     # the chain positions the cache lacks
        c = len(want)                            # slots once the chain is in
        nodes = 0 if tree is None else len(tree[1])
        if len(new) + nodes == 0:
            return None
        if len(new) and not (0 <= new.min() and new.max() < self.V):
            bad = int(new[(new < 0) | (new >= self.V)][0])
            raise ValueError(f"an id is {bad}, outside the vocabulary [0, {self.V})")
        if c + nodes > self._k.shape[2]:
            self._allocate(c + nodes + 64)
        if tree is None:
            tokens, positions = new, np.arange(m, c)
            bias = self._causal[m:c, :c]                                         # [n, c] a view
        else:
            parents, node_tokens, depth, ancestors = tree
            tokens = np.concatenate([new, node_tokens])
            positions = np.concatenate([np.arange(m, c), c - 1 + depth])         # a node sits at its depth
            bias = np.full((c - m + nodes, c + nodes), -np.inf, np.float32)      # [n, c + nodes]
            bias[:c - m, :c] = self._causal[m:c, :c]                             # the chain: causal
            bias[c - m:, :c] = 0.0                                               # a node sees the whole chain...
            bias[c - m:, c:][ancestors] = 0.0                                    # ...and its ancestors, itself
        logits = forward(self.params, self.layers, tokens, positions, self._k, self._v, m, bias, self.n_head)
        self._logits[m:c] = logits[:c - m]
        self._tokens = want
        return logits[c - m:]

    def _rows(self, logits, temperature):
        return tempered_probs(logits.astype(np.float64), temperature)

    # ------------------------------------------------------------ the Target interface
    def probs_for_positions(self, ids, start, temperature=1.0):
        """p(. | ids[:t]) for t = start..len(ids), in one call: [len(ids) - start + 1, V].

        With ids = prefix + gamma drafted ids and start = len(prefix), these are the gamma + 1
        rows a verification step needs; the cache computes only the positions it does not hold.
        """
        ids = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        if not 0 <= start <= len(ids):
            raise ValueError(f"start is {start}, outside [0, len(ids)] = [0, {len(ids)}]")
        groups, t = [], start
        while t <= len(ids):                     # one window, unless the rows cross a hop
            window = self.window_start(t)
            last = min(len(ids), window + self.context)     # the last row this window serves
            self._extend(ids, window, last)
            groups.append(self._logits[t - window:last - window + 1].copy())
            t = last + 1
        return self._rows(groups[0] if len(groups) == 1 else np.concatenate(groups), temperature)

    def probs_for_tree(self, ids, parents, tokens, temperature=1.0):
        """p(. | ids) and p(. | ids + the path to node i) for every node of a draft tree, in one call.

        Node i holds tokens[i] under node parents[i] (-1: under the root, the context `ids`),
        an earlier node. Returns [len(tokens) + 1, V]: row 0 for the root, row i + 1 for node i.
        The missing chain positions and every node are computed in one forward pass.
        """
        ids = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        if len(parents) != len(tokens):
            raise ValueError(f"len(parents) is {len(parents)} but len(tokens) is {len(tokens)}: one parent per node")
        n = len(tokens)
        depth = np.ones(n, np.int64)
        ancestors = np.eye(n, dtype=bool)        # ancestors[i, j]: node j is node i or one of its ancestors
        for i, (parent, token) in enumerate(zip(parents, tokens)):
            if not -1 <= parent < i or not 0 <= token < self.V:
                raise ValueError(f"node {i}: parent {parent} must be in [-1, {i}) and token {token} in [0, {self.V})")
            if parent >= 0:
                depth[i] = depth[parent] + 1
                ancestors[i] |= ancestors[parent]
        if n and depth.max() > self.context - self.hop + 1:   # its deepest rows would need text after ids
            raise ValueError(f"the tree is {depth.max()} deep; at most context - hop + 1 = "
                             f"{self.context - self.hop + 1} levels fit in a window")
        node_tokens = np.asarray(tokens, np.int64).reshape(n)
        t = len(ids) + np.concatenate([[0], depth])                    # row r is p(. | a prefix of length t[r])
        windows = [self.window_start(int(x)) for x in t]
        out = np.empty((n + 1, self.V), np.float32)
        for window in sorted(set(windows), reverse=True):             # one window, unless the tree crosses a hop
            fits = t[1:] - window <= self.context                      # the nodes this window can hold
            keep = np.flatnonzero(fits)                                # ...closed under ancestors: shallower
            renumber = np.cumsum(fits) - 1
            sub_parents = np.asarray(parents, np.int64)[keep]
            sub = (np.where(sub_parents >= 0, renumber[sub_parents], -1), node_tokens[keep], depth[keep],
                   ancestors[np.ix_(keep, keep)])
            node_logits = self._extend(ids, window, len(ids), tree=sub)
            rows = [r for r in range(n + 1) if windows[r] == window]
            for r in rows:
                out[r] = self._logits[len(ids) - window] if r == 0 else node_logits[renumber[r - 1]]
        return self._rows(out, temperature)

    def next_token_probs(self, contexts, temperature=1.0):
        """[B, V] next-token distributions, one row per context (a list of id lists), through the cache in turn."""
        return np.concatenate([self.probs_for_positions(c, len(c), temperature) for c in contexts])

    def encode(self, text):
        return self.vocab.encode(text)

    def decode(self, ids):
        return self.vocab.decode(ids)


def load(path):
    """A TransformerModel from an npz written by train_transformer (float16 weights become float32)."""
    from specdec.models.data import CharVocab

    with np.load(path) as f:
        params = {k: f[k] for k in param_names(int(f["n_layer"]))}
        vocab = CharVocab("".join(chr(c) for c in f["charset"]))
        return TransformerModel(params, int(f["n_head"]), int(f["context"]), int(f["hop"]), int(f["start"]), vocab)
