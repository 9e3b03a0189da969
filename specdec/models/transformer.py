"""A small decoder-only transformer target p in NumPy, character level, with a KV cache that rolls back.

The architecture is GPT-2's (Radford et al. 2019) at toy size, in the style of
picoGPT: learned token and position embeddings, `n_layer` pre-LayerNorm blocks
of causal multi-head self-attention and a 4x GELU MLP, a final LayerNorm, a
linear head. The shipped weights (`target_transformer.npz`, written by
`python -m specdec.models.train_transformer`) have d = 192, 4 layers, 4 heads:
1.87 M parameters, stored in float16 (3.5 MB), computed in float32. Held out
(train.py's split), 0.956 nats/char against the MLP's 1.200.

    x = wte[tokens] + wpe[positions]                   # [n, d]
    x = x + attention(layer_norm(x))                   # each block, n_layer times
    x = x + mlp(layer_norm(x))
    z = layer_norm(x) @ head_w + head_b                # [n, V]  logits; p = softmax(z / T)

A call gives the rows the Target interface asks for, and keeps a cache:

    >>> model = TransformerModel(init_params(V=5, context=8, d=8, n_layer=1, seed=0), n_head=2, hop=4)
    >>> model.probs_for_positions([1, 2, 3], 1).shape    # rows p(. | ids[:t]) for t = 1, 2, 3
    (3, 5)
    >>> model.cached_ids, model.cache_length
    ([1, 2, 3], 3)
    >>> row = model.probs_for_positions([1, 2, 4], 3)     # rolls back the 3, computes only the 4
    >>> model.cached_ids, bool(np.allclose(row, model.fresh().probs_for_positions([1, 2, 4], 3), atol=1e-6))
    ([1, 2, 4], True)

The pass, folded (`fold`). The formulas above are what the model computes; the
pass computes them with fewer NumPy calls, because on this CPU most of a call
that scores a few positions is the fixed cost of dispatching small operations,
not arithmetic. Three identities fold work into the weights once, at load:

- A LayerNorm only ever sees its input minus the input's mean, and every
  write to the residual stream is linear. So the stream is kept centred: the
  embeddings and the two matrices (and biases) that write into it are
  multiplied by C = I - 11^T / d, and LayerNorm needs no mean at all, only one
  reduction per row (the sum of squares), instead of NumPy's mean, subtract,
  square, mean, add, sqrt, divide.
- LayerNorm's gain and bias, then a matrix: (x_hat g + b) W + c =
  x_hat (g W) + (b W + c), and the per-row scale 1 / std commutes with the
  product, so it is applied to the product's output: LayerNorm costs one
  multiply on top of the product that follows it.
- Attention's 1 / sqrt(d / heads) goes into the query columns; GELU's 0.5 into
  the MLP's output matrix (exact: a power of two).

The result is the same function up to float32 rounding (on the shipped weights,
rows agree with the unfolded pass to ~3e-6 and every argmax is the same;
`tests/library/test_transformer.py` holds them to the pass as first shipped, kept
as `tests/unfolded_transformer.py`). Small products are also issued as the BLAS
call that is cheapest for their number of rows (`_mm`).

Most of a call is fixed cost (the NumPy operations of its layers), and each
further position adds less than a call does, by how much depending on the
machine's BLAS kernels for small products: that is what makes verifying gamma
drafts in one call pay. Lesson 08 measures both parts, with intervals, on the
machine it runs on.

Context. The model sees at most `context` = 256 characters, after a start
symbol (the newline, the id the MLP pads with) in slot 0 of every window, so it has
context + 1 positions. The window for p(. | ids[:t]) is ids[s:t] with
s = `window_start(t)`: 0 while t <= context; past it, s moves in hops of
`hop` = 128, so the window keeps between the last context - hop + 1 and
context characters. s depends on t alone, so every row is a fixed function of
its prefix, whatever was computed before.

The next window's cache is filled as the text goes. A call treats ids[:start]
(the text before the first row it is asked for: in decoding, the text generated
so far) as settled; once at least `FILL_CHUNK` = 15 settled characters at or past
the next window's start s + hop are missing from that window's cache, the call
computes them there too, in the same forward pass (their keys and values only: no
logits, which that window never serves for them). So when the rows reach the next
window, its cache holds all but the last few characters, and no call ever computes
a whole window (the first call of a generation, which computes the prompt, aside).
Up to three windows are kept (the one the rows are in, the next, and one a step's
rows may straddle into); a verification step whose rows straddle a hop, followed by
a rejection, finds both windows' caches.

The KV cache, as serving engines keep it. The model remembers, per window, the
ids its cache holds (`cached_ids`, from `cache_start`, for the window of the
last row served), with, per slot and per layer, the keys and values, and the last
layer's logits. A call (`probs_for_positions`, `probs_for_tree`) finds the longest
common prefix of the cache and its `ids`, drops the cached tail beyond it
(rollback: the rejected drafts of the last verification), computes only the missing
positions, in one forward pass, and reads every requested row from the stored
logits (a row the cache already held costs nothing). The cache then holds
exactly that window of `ids`: its memory is bounded by the text kept (at most
context + 1 slots per window, in arrays allocated once). `keep(n)` and `rollback(k)`
do the same by hand.

A tree call scores every node in the same single pass: the nodes are written
after the cache, each at the position of its depth, and an attention mask lets
each see the cache and its own ancestors only (SpecInfer's tree attention). The
cache's length does not move, so the tree's keys and values are not kept: the
next call overwrites them. The chain positions the cache lacks (after a tree
step, the accepted path and the correction) join that same pass.

Two drafts read the target's own computation (`heads.py`, `early_exit.py`):
`keep_features = True` stores each position's final hidden state (the input of
the head, after the final LayerNorm) beside its logits, for heads that predict
further tokens from it (`features`); `partial_probs(ids, layers)` runs only the
first `layers` blocks on the positions it lacks, then the final LayerNorm and
head (an early exit), and keeps those blocks' keys and values, so the next full
call resumes those positions at block `layers` instead of recomputing them.

Rows agree with a model without a cache to float32 rounding (~1e-6), not bit
for bit: a BLAS matrix product sums in an order that depends on its shape, so a
row computed among gamma + 1 differs in its last bits from the same row computed
alone. Greedy decoding is therefore reproduced token for token unless two
logits tie to within rounding.
"""

import numpy as np

from ..generation.rows import tempered_probs

LAYER_NAMES = ("ln1.g", "ln1.b", "attn.w_qkv", "attn.b_qkv", "attn.w_proj", "attn.b_proj",
               "ln2.g", "ln2.b", "mlp.w_fc", "mlp.b_fc", "mlp.w_out", "mlp.b_out")
TOP_NAMES = ("wte", "wpe", "ln_f.g", "ln_f.b", "head.w", "head.b")
EPS = 1e-5                 # LayerNorm's epsilon (PyTorch's default, as trained)
FILL_CHUNK = 15            # settled characters the next window lacks before a call computes them there (at most):
#                            with plain decoding's one row, a pass of 16 rows, a multiple of 4 (`_mm`)
GELU_C = 0.7978845608028654                     # sqrt(2 / pi)
MM_ROWS = 6


def param_names(n_layer):
    """The flat parameter names, as stored in the npz: 'wte', ..., 'h0.ln1.g', ..., f'h{n_layer - 1}.mlp.b_out'."""
    return TOP_NAMES + tuple(f"h{i}.{name}" for i in range(n_layer) for name in LAYER_NAMES)


def init_params(V, context, d, n_layer, seed=0):
    """Random float32 parameters (GPT-2's init: N(0, 0.02), residual projections scaled by 1/sqrt(2 n_layer))."""
    rng = np.random.default_rng(seed)
    normal = lambda *shape, std=0.02: (rng.standard_normal(shape) * std).astype(np.float32)
    ones, zeros = (lambda n: np.ones(n, np.float32)), (lambda n: np.zeros(n, np.float32))
    p = {"wte": normal(V, d), "wpe": normal(context + 1, d), "ln_f.g": ones(d), "ln_f.b": zeros(d),
         "head.w": normal(d, V), "head.b": zeros(V)}
    res = 0.02 / np.sqrt(2 * n_layer)
    for i in range(n_layer):
        p.update({f"h{i}.ln1.g": ones(d), f"h{i}.ln1.b": zeros(d),
                  f"h{i}.attn.w_qkv": normal(d, 3 * d), f"h{i}.attn.b_qkv": zeros(3 * d),
                  f"h{i}.attn.w_proj": normal(d, d, std=res), f"h{i}.attn.b_proj": zeros(d),
                  f"h{i}.ln2.g": ones(d), f"h{i}.ln2.b": zeros(d),
                  f"h{i}.mlp.w_fc": normal(d, 4 * d), f"h{i}.mlp.b_fc": zeros(4 * d),
                  f"h{i}.mlp.w_out": normal(4 * d, d, std=res), f"h{i}.mlp.b_out": zeros(d)})
    return p


def gelu(x):
    """GELU, tanh approximation (GPT-2's; PyTorch's approximate='tanh')."""
    return 0.5 * x * (1 + np.tanh(GELU_C * (x + 0.044715 * x * x * x)))


# ---------------------------------------------------------------- the folded forward pass
def fold(params, n_head):
    """(top, layers): the parameters rearranged for the folded pass (module docstring), float32, computed in float64.

    top: wte, wpe (centred), head_w = sqrt(d) g_f W_head, head_b = b_f W_head + b_head, the final LayerNorm's g and b
    (for `features`), d eps. layers: per block (w_qkv, b_qkv, w_proj, b_proj, w_fc, b_fc, w_out, b_out).
    """
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    d = p["wte"].shape[1]
    n_layer = sum(1 for k in p if k.endswith(".ln1.g"))
    centre = lambda w: w - w.mean(-1, keepdims=True)           # w C: each row (a bias: the vector) minus its mean
    f32 = lambda w: np.ascontiguousarray(w, np.float32)
    root_d = np.sqrt(d)

    def after_norm(g, b, w, c):                                 # LayerNorm(g, b), then @ w + c
        return f32(root_d * g[:, None] * w), f32(b @ w + c)

    top = {"wte": f32(centre(p["wte"])), "wpe": f32(centre(p["wpe"])), "ln_f.g": f32(p["ln_f.g"]),
           "ln_f.b": f32(p["ln_f.b"]), "d_eps": float(d * EPS), "root_d": float(root_d)}
    top["head_w"], top["head_b"] = after_norm(p["ln_f.g"], p["ln_f.b"], p["head.w"], p["head.b"])
    layers = []
    for i in range(n_layer):
        q = lambda name: p[f"h{i}.{name}"]
        w_qkv, b_qkv = after_norm(q("ln1.g"), q("ln1.b"), q("attn.w_qkv"), q("attn.b_qkv"))
        scale = (d // n_head) ** -0.5
        w_qkv[:, :d] *= np.float32(scale)                       # the queries' columns
        b_qkv[:d] *= np.float32(scale)
        w_fc, b_fc = after_norm(q("ln2.g"), q("ln2.b"), q("mlp.w_fc"), q("mlp.b_fc"))
        layers.append((w_qkv, b_qkv, f32(centre(q("attn.w_proj"))), f32(centre(q("attn.b_proj"))), w_fc, b_fc,
                       f32(0.5 * centre(q("mlp.w_out"))), f32(centre(q("mlp.b_out")))))
    return top, layers


if hasattr(np, "vecdot"):                                       # NumPy >= 2.0: one reduction, no temporary
    def _sum_squares(x):
        return np.vecdot(x, x)
else:                                                           # pragma: no cover (NumPy 1.26)
    def _sum_squares(x):
        return np.einsum("ij,ij->i", x, x)


def _mm(x, w):
    """x @ w for a pass's rows, in the BLAS call that is cheapest for their number (the same up to float32 rounding).

    OpenBLAS's matrix product (with the Haswell kernels this machine's environment selects) works on rows in
    blocks of 4: a few rows cost about what a full block costs, a remainder more, and one row goes to a
    matrix-vector kernel. So 2 to MM_ROWS rows take one matrix-vector product each (NumPy's loop over a stack
    of [1, d] rows), and more rows are padded to a multiple of 4. BLAS builds with small-matrix kernels
    (OpenBLAS's SkylakeX) would rather take one product for 2..6 rows: MM_ROWS = 1 does that. Lesson 08
    measures the steps left in a call's cost (`generation.roofline.cost_steps`).
    """
    n = len(x)
    if n == 1 or n % 4 == 0 and n > MM_ROWS:
        return x @ w
    if n <= MM_ROWS:
        return (x[:, None] @ w).reshape(n, w.shape[1])
    padded = np.zeros((n + 4 - n % 4, x.shape[1]), np.float32)
    padded[:n] = x
    return (padded @ w)[:n]


def attend(q, k, v, bias):
    """softmax(q k^T + bias) v per head: q [h, n, hd] over k, v [h, m, hd] (q pre-scaled); bias [n, m] or None."""
    s = q @ k.transpose(0, 2, 1)                                # [h, n, m]
    if bias is not None:
        s += bias
    s -= s.max(-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(-1, keepdims=True)
    return s @ v                                                # [h, n, hd]


class Pass:
    """What a forward pass does besides its rows' logits (each optional; `forward`'s last argument).

    fill      (tokens, positions, k_cache, v_cache, first, bias): rows of another window (the next one), riding
              in the same products; they see that window's cache as `bias` says, and only their keys and
              values are kept (no logits: that window never serves rows for them)
    enter     (block, x): the pass's first len(x) rows resume at `block` from the residual stream x [p, d]
              (their earlier blocks' keys and values are in the cache: an early exit computed them)
    stop      a block count: run only the first `stop` blocks, then the final LayerNorm and head (an early
              exit); the residual stream there is left in `x`
    features  True: leave the rows' final hidden states (the head's input, after ln_f) in `features`
    """

    __slots__ = ("fill", "enter", "stop", "features", "x")

    def __init__(self, fill=None, enter=None, stop=None, features=False):
        self.fill, self.enter, self.stop, self.features, self.x = fill, enter, stop, features, None


def forward(params, layers, tokens, positions, k_cache, v_cache, first, bias, n_head, extra=None):
    """Logits [n, V] of n new tokens at `positions`; their keys and values go to cache slots first..first + n - 1.

    (With Pass.enter, the p resumed rows come first: the logits are [p + n, V], from slot first.)
    params, layers: `fold`'s. k_cache, v_cache: [n_layer, h, slots, hd]; bias [n, first + n] (0 or -inf) says
    which slots each new token sees (None: every slot up to the pass's last). extra: a `Pass`, or None.
    """
    lo, hi, fill = 0, len(layers), None
    x = params["wte"][tokens] + params["wpe"][positions]                     # [n, d], the centred stream
    if extra is not None:
        if extra.stop is not None:
            hi = extra.stop
        if extra.fill is not None:
            f_tokens, f_positions, *rest = extra.fill
            fill = (params["wte"][f_tokens] + params["wpe"][f_positions], *rest)
        if extra.enter is not None:                                        # early-exit rows resume at a block,
            lo, resumed = extra.enter                                      # before the pass's new rows
            p = len(resumed)
            # the new rows (and any fill rows) first run the blocks before it
            x, fill = _blocks(params, layers, 0, lo, x, k_cache, v_cache, first + p,
                              None if bias is None else bias[p:], n_head, fill)
            x = np.concatenate([resumed, x])
    x, _ = _blocks(params, layers, lo, hi, x, k_cache, v_cache, first, bias, n_head, fill)
    r = (_sum_squares(x) + params["d_eps"]) ** -0.5                         # final LayerNorm: 1 / (sqrt(d) std)
    if extra is not None:
        extra.x = x if extra.stop is not None else None
        if extra.features:
            extra.features = (x * (r * params["root_d"])[:, None]) * params["ln_f.g"] + params["ln_f.b"]
    z = _mm(x, params["head_w"])
    z *= r[:, None]
    z += params["head_b"]
    return z


def _blocks(params, layers, lo, hi, x, k_cache, v_cache, first, bias, h, fill=None):
    """x [n, d] through blocks lo..hi - 1, keys and values to slots first.. (bias as in `forward`), with
    `fill` (Pass.fill, tokens embedded) riding in the same products; returns (the n rows' residual stream,
    `fill` with its rows' stream, None after the last block)."""
    n, d = x.shape
    hd, d_eps = d // h, params["d_eps"]
    nf = 0
    if fill is not None:
        fx, fk, fv, ff, f_bias = fill
        nf = len(fx)
        x = np.concatenate([x, fx])
    for i in range(lo, hi):
        w_qkv, b_qkv, w_proj, b_proj, w_fc, b_fc, w_out, b_out = layers[i]
        rows = n + nf
        qkv = _mm(x, w_qkv)
        qkv *= ((_sum_squares(x) + d_eps) ** -0.5)[:, None]               # LayerNorm, folded (module docstring)
        qkv += b_qkv
        q, k, v = qkv.reshape(rows, 3, h, hd).transpose(1, 2, 0, 3)      # 3 x [h, rows, hd]
        k_cache[i, :, first:first + n] = k[:, :n]
        v_cache[i, :, first:first + n] = v[:, :n]
        # one row sees every slot up to its own: its bias row is all zeros, and adding it is a wasted call
        a = attend(q[:, :n], k_cache[i, :, :first + n], v_cache[i, :, :first + n], bias if n > 1 else None)
        if nf:
            fk[i, :, ff:ff + nf] = k[:, n:]
            fv[i, :, ff:ff + nf] = v[:, n:]
            if i == len(layers) - 1:                                       # the last block: keys and values were
                x, nf, rows = x[:n], 0, n                                  # all the fill rows needed
            else:
                a = np.concatenate([a, attend(q[:, n:], fk[i, :, :ff + nf], fv[i, :, :ff + nf],
                                               f_bias if nf > 1 else None)], 1)
        x = x + _mm(a.transpose(1, 0, 2).reshape(rows, d), w_proj)
        x += b_proj
        u = _mm(x, w_fc)
        u *= ((_sum_squares(x) + d_eps) ** -0.5)[:, None]
        u += b_fc
        t = u * u                                                          # GELU; its 0.5 is in w_out
        t *= GELU_C * 0.044715
        t += GELU_C
        t *= u
        np.tanh(t, out=t)
        t += 1.0
        t *= u
        x += _mm(t, w_out)
        x += b_out
    if nf:
        fill = (x[n:], fk, fv, ff, f_bias)
    elif fill is not None:
        fill = None                                                        # done: the last block was run
    return x[:n], fill


def window_start(t, context, hop):
    """s: p(. | ids[:t]) is computed from ids[s:t]; 0 until t > context, then the least multiple of hop
    with t - s <= context, so a window holds between context - hop + 1 and context characters."""
    return 0 if t <= context else hop * -(-(t - context) // hop)


def common_prefix(a, b):
    """The length of the longest common prefix of the sequences a and b."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:                                  # the usual case, one C-speed list comparison
        return n
    return int(np.argmax(np.asarray(a[:n]) != np.asarray(b[:n])))


# ---------------------------------------------------------------- the model and its cache
class _Window:
    """The cache of one window s: `tokens` = [start] + ids[s:...] in slots 0.., their keys and values [n_layer, h,
    slots, hd], the last layer's logits and (keep_features) final hidden states per slot. `part`: the ids after
    `tokens` whose first `part_blocks` blocks an early exit computed, with the residual stream after them
    (`resid`) and the exit's logits, per slot. `tree`: the last tree pass, (c, parents, tokens, logits, features),
    node i's keys and values in slot c + i, until another pass writes there."""

    __slots__ = ("s", "tokens", "k", "v", "logits", "features", "part", "part_blocks", "resid", "exit_logits",
                 "tree")

    def __init__(self, s, arrays):
        self.s, self.tokens, self.part, self.part_blocks, self.tree = s, [], [], None, None
        self.k, self.v, self.logits, self.features, self.resid, self.exit_logits = arrays

    def adopt(self, want):
        """If `want` continues the cache along a path of the last tree pass, move that path's keys, values, logits
        and features from the nodes' slots to the chain's (a node saw exactly the chain and its ancestors, at the
        position of its depth: what the chain computes there), so the accepted drafts are not computed again."""
        tree, self.tree = self.tree, None
        if tree is None:
            return
        c, parents, tokens, logits, features = tree
        if len(self.tokens) != c or self.part or self.tokens != want[:c]:
            return
        path, node = [], -1
        for x in want[c:]:
            node = next((i for i in range(node + 1, len(tokens)) if parents[i] == node and tokens[i] == x), None)
            if node is None:
                break
            path.append(node)
        if path:
            src, dst = c + np.asarray(path), np.arange(c, c + len(path))
            self.k[:, :, dst] = self.k[:, :, src]                # advanced indexing reads a copy first
            self.v[:, :, dst] = self.v[:, :, src]
            self.logits[dst] = logits[path]
            if features is not None:
                self.features[dst] = features[path]
            self.tokens += [tokens[i] for i in path]

    def arrays(self):
        return self.k, self.v, self.logits, self.features, self.resid, self.exit_logits

    def cut(self, n):
        """Keep the cache of ids[:n] (text positions) only: every slot after ids[n - 1] goes, the early exit's too."""
        del self.tokens[max(0, n - self.s + 1):]
        self.part.clear()
        self.tree = None

    def match(self, want):
        """Roll back to the longest common prefix with `want` ([start] + ids[s:...]): (full slots, early-exit slots)
        of `want` the cache holds."""
        self.adopt(want)
        m = common_prefix(self.tokens, want)
        if m < len(self.tokens):
            del self.tokens[m:]
            self.part.clear()
        resume = common_prefix(self.part, want[m:])
        del self.part[resume:]
        return m, resume


class TransformerModel:
    """The transformer target: rows p(. | prefix) for a chain or a tree of positions, served from a KV cache."""

    MAX_WINDOWS = 3

    def __init__(self, params, n_head, context=None, hop=None, start=0, vocab=None):
        self.n_layer = sum(1 for k in params if k.endswith(".ln1.g"))
        self.params = {k: np.asarray(params[k], np.float32) for k in param_names(self.n_layer)}
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
        self.folded, self.folded_layers = fold(self.params, self.n_head)
        # -inf above the diagonal: row i (a slot) may see slots 0..i. A chain's mask is a view into it.
        n = self.context + 1
        self._causal = np.triu(np.full((n, n), -np.inf, np.float32), 1)
        self._slots = n + 64                     # the window's slots, and room after them for a tree's nodes
        self.keep_features = False               # also store each position's final hidden state (for heads)
        self.fill_chunk = max(1, min(FILL_CHUNK, self.hop // 8))   # 15 for the shipped hop of 128
        self.reset()

    def _arrays(self, slots):
        """New (k, v, logits, features, resid, exit logits) arrays for a window cache of `slots` slots."""
        shape = (self.n_layer, self.n_head, slots, self.d // self.n_head)
        return (np.zeros(shape, np.float32), np.zeros(shape, np.float32), np.zeros((slots, self.V), np.float32),
                np.zeros((slots, self.d), np.float32), np.zeros((slots, self.d), np.float32),
                np.zeros((slots, self.V), np.float32))

    def fresh(self):
        """The same weights (shared, not copied) with an empty cache."""
        model = TransformerModel.__new__(TransformerModel)
        model.__dict__.update(self.__dict__)
        model.reset()
        return model

    # ------------------------------------------------------------ the cache, for the lesson
    @property
    def cache_start(self):
        """The text index of the window that served the last row (its slot 1; slot 0 is the start symbol)."""
        return 0 if self._current is None else self._current.s

    @property
    def cache_length(self):
        """How many text ids that window's cache holds: ids[cache_start : cache_start + cache_length]."""
        return 0 if self._current is None else max(0, len(self._current.tokens) - 1)

    @property
    def cached_ids(self):
        return [] if self._current is None else [int(t) for t in self._current.tokens[1:]]

    @property
    def _k(self):
        """The keys of the window that served the last row: [n_layer, h, slots, hd] (for the lesson)."""
        return (self._current or self._window(0)).k

    def reset(self):
        """Empty the cache (every window)."""
        self._windows, self._current, self._tree = [], None, None

    def keep(self, n):
        """Keep the cache of ids[:n] and drop every position after it (n in text positions, from the start)."""
        if n < 0:
            raise ValueError(f"n is {n}, it must be >= 0")
        for w in self._windows:
            w.cut(n)
        self._tree = None
        if self._current is not None and self._current.s > n:      # it holds nothing now: the window before it
            self._current = max((w for w in self._windows if w.s <= n), key=lambda w: w.s, default=None)

    def rollback(self, k):
        """Drop the last k ids the cache holds (all of them if k >= cache_length)."""
        if k < 0:
            raise ValueError(f"k is {k}, it must be >= 0")
        if self._current is not None:
            self.keep(max(self._current.s, self._current.s + self.cache_length - k))

    def window_start(self, t):
        """s: p(. | ids[:t]) is computed from the window ids[s:t] (module-level `window_start`)."""
        return window_start(t, self.context, self.hop)

    # ------------------------------------------------------------ filling the cache
    def _window(self, s, protect=None):
        """The cache of window s; made if absent, in the arrays of the window that starts first (but `protect`)
        once MAX_WINDOWS are kept."""
        for w in self._windows:
            if w.s == s:
                return w
        if len(self._windows) >= self.MAX_WINDOWS:
            old = min((w for w in self._windows if w is not protect), key=lambda w: w.s)
            self._windows.remove(old)
            arrays = old.arrays()
        else:
            arrays = self._arrays(self._slots)
        w = _Window(s, arrays)
        self._windows.append(w)
        return w

    def _grow(self, w, slots):
        """Give window w room for `slots` slots (a bigger tree than ever before), keeping what it holds."""
        new = self._arrays(slots + 64)
        n = len(w.tokens) + len(w.part)
        for old, arr in zip(w.arrays(), new):
            arr[..., :n, :] = old[..., :n, :]
        w.k, w.v, w.logits, w.features, w.resid, w.exit_logits = new
        self._slots = max(self._slots, slots + 64)

    def _fill(self, ids, settled, protect):
        """(Pass.fill, window, its tokens after the pass) for the settled ids[:settled] the next window lacks,
        once `fill_chunk` of them are missing; else None."""
        s = self.window_start(settled) + self.hop
        if settled - s < self.fill_chunk:
            return None
        w = self._window(s, protect)
        want = [self.start] + ids[s:settled]
        m, _ = w.match(want)
        if len(want) - m < self.fill_chunk:
            return None
        w.part.clear()                           # the fill computes those slots in full, from slot m
        return (np.asarray(want[m:], np.int64), np.arange(m, len(want)), w.k, w.v, m,
                self._causal[m:len(want), :len(want)]), w, want

    def _extend(self, ids, s, end, tree=None, settled=None):
        """Make window s's cache hold [start] + ids[s:end], computing only what it lacks, in ONE forward pass.

        tree = (parents, tokens, depth, ancestors) appends a tree's nodes to that same pass, after the
        chain; their (logits, features or None) are returned, their keys and values are not kept. settled: the
        text index before which ids are settled (the next window is filled with them, `_fill`); None: no fill.
        """
        w = self._window(s)
        want = [self.start] + ids[s:end]
        m, resume = w.match(want)                # full slots held, and slots an early exit computed after them
        c = len(want)                            # slots once the chain is in
        nodes = 0 if tree is None else len(tree[1])
        fill = None if settled is None else self._fill(ids, settled, w)
        if c - m + nodes == 0 and fill is None:
            return None, None
        new = np.asarray(want[m + resume:], np.int64)   # the chain positions the cache lacks entirely
        if len(new) and not (0 <= new.min() and new.max() < self.V):
            bad = int(new[(new < 0) | (new >= self.V)][0])
            raise ValueError(f"an id is {bad}, outside the vocabulary [0, {self.V})")
        if c + nodes > w.k.shape[2]:
            self._grow(w, c + nodes)
        n = c - m
        if tree is None:
            tokens, positions = new, np.arange(m + resume, c)
            bias = self._causal[m:c, :c]                                       # [n, c] a view
        else:
            parents, node_tokens, depth, ancestors = tree
            tokens = np.concatenate([new, node_tokens])
            positions = np.concatenate([np.arange(m + resume, c), c - 1 + depth])   # a node sits at its depth
            bias = np.full((n + nodes, c + nodes), -np.inf, np.float32)        # [n, c + nodes]
            bias[:n, :c] = self._causal[m:c, :c]                               # the chain: causal
            bias[n:, :c] = 0.0                                                 # a node sees the whole chain...
            bias[n:, c:][ancestors] = 0.0                                      # ...and its ancestors, itself
        extra = None
        if fill is not None or resume or self.keep_features:
            extra = Pass(fill=None if fill is None else fill[0], features=self.keep_features,
                         enter=(w.part_blocks, w.resid[m:m + resume]) if resume else None)
        args = (self.folded, self.folded_layers, tokens, positions, w.k, w.v, m, bias, self.n_head)
        logits = forward(*args) if extra is None else forward(*args, extra)
        w.logits[m:c] = logits[:n]
        features = None
        if self.keep_features:
            w.features[m:c] = extra.features[:n]
            features = extra.features[n:]
        w.tokens = want
        w.part.clear()
        if tree is not None:
            w.tree = (c, tree[0].tolist(), tree[1].tolist(), logits[n:], features)
        if fill is not None:
            fill[1].tokens = fill[2]
        return logits[n:], features

    def _rows(self, logits, temperature):
        return tempered_probs(logits.astype(np.float64), temperature)

    # ------------------------------------------------------------ the Target interface
    def probs_for_positions(self, ids, start, temperature=1.0):
        """p(. | ids[:t]) for t = start..len(ids), in one call: [len(ids) - start + 1, V].

        With ids = prefix + gamma drafted ids and start = len(prefix), these are the gamma + 1
        rows a verification step needs; the cache computes only the positions it does not hold.
        """
        return self._rows(self._served(ids, start, "logits"), temperature)

    def _served(self, ids, start, what):
        """A copy of `what` ("logits" or "features") of the cache slots that hold the rows t = start..len(ids),
        computed first. Copied window by window: a later window may reuse an earlier one's arrays."""
        ids = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        if not 0 <= start <= len(ids):
            raise ValueError(f"start is {start}, outside [0, len(ids)] = [0, {len(ids)}]")
        groups, t, settled = [], start, start
        while t <= len(ids):                     # one window, unless the rows cross a hop
            s = self.window_start(t)
            last = min(len(ids), s + self.context)     # the last row this window serves
            self._extend(ids, s, last, settled=settled)
            settled = None                       # the next window's fill rides in the first pass
            self._current = w = self._window(s)
            groups.append(getattr(w, what)[t - s:last - s + 1].copy())
            t = last + 1
        return groups[0] if len(groups) == 1 else np.concatenate(groups)

    def features_for_positions(self, ids, start):
        """The final hidden states [len(ids) - start + 1, d] that give p(. | ids[:t]), t = start..len(ids) (one call,
        as probs_for_positions; needs keep_features = True)."""
        if not self.keep_features:
            raise ValueError("features are kept only with keep_features = True: set it before decoding")
        return self._served(ids, start, "features")

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
        features = np.empty((n + 1, self.d), np.float32) if self.keep_features else None
        settled = len(ids)
        for s in sorted(set(windows), reverse=True):                  # one window, unless the tree crosses a hop
            fits = t[1:] - s <= self.context                           # the nodes this window can hold
            keep = np.flatnonzero(fits)                                # ...closed under ancestors: shallower
            renumber = np.cumsum(fits) - 1
            sub_parents = np.asarray(parents, np.int64)[keep]
            sub = (np.where(sub_parents >= 0, renumber[sub_parents], -1), node_tokens[keep], depth[keep],
                   ancestors[np.ix_(keep, keep)])
            node_logits, node_features = self._extend(ids, s, len(ids), tree=sub, settled=settled)
            settled = None
            w = self._window(s)
            for r in (r for r in range(n + 1) if windows[r] == s):
                root = r == 0
                out[r] = w.logits[len(ids) - s] if root else node_logits[renumber[r - 1]]
                if features is not None:
                    features[r] = w.features[len(ids) - s] if root else node_features[renumber[r - 1]]
        self._current = self._window(windows[0])
        self._tree = (ids, list(parents), list(tokens), features)
        return self._rows(out, temperature)

    def next_token_probs(self, contexts, temperature=1.0):
        """[B, V] next-token distributions, one row per context (a list of id lists), through the cache in turn."""
        return np.concatenate([self.probs_for_positions(c, len(c), temperature) for c in contexts])

    # ------------------------------------------------------------ what drafts read of the target's computation
    def features(self, ids, compute=True):
        """The final hidden state [d] that gives p(. | ids) (the head's input), from the cache or the last tree call.

        Needs keep_features = True (a draft that reads them sets it); a prefix the model has not computed is
        computed, one call (compute=False: None instead).
        """
        ids = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        if not self.keep_features:
            raise ValueError("features are kept only with keep_features = True: set it before decoding")
        t = len(ids)
        s = self.window_start(t)
        for w in self._windows:
            if w.s == s and len(w.tokens) > t - s and w.tokens[1:t - s + 1] == ids[s:t]:
                return w.features[t - s]
        if self._tree is not None and self._tree[3] is not None:
            base, parents, tokens, features = self._tree
            if len(base) <= t and ids[:len(base)] == base:
                node = -1
                for x in ids[len(base):]:              # walk down the last tree along the rest of ids
                    node = next((i for i, (p, y) in enumerate(zip(parents, tokens)) if p == node and y == x), None)
                    if node is None:
                        break
                else:
                    return features[node + 1]
        if not compute:
            return None
        self.probs_for_positions(ids, t)
        return self._window(s).features[t - s]

    def partial_probs(self, ids, blocks, temperature=1.0):
        """An early exit: p_blocks(. | ids) [V], through the first `blocks` blocks, then the final LayerNorm and head.

        The positions the cache lacks go through those blocks only, and their keys and values stay: the
        next full call over them (a verification) starts them at block `blocks`. The KV cache is shared.
        """
        ids = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        if not 1 <= blocks <= self.n_layer:
            raise ValueError(f"blocks is {blocks}, outside [1, n_layer = {self.n_layer}]")
        t = len(ids)
        s = self.window_start(t)
        w = self._window(s)
        want = [self.start] + ids[s:t]
        if w.part_blocks != blocks:
            w.part.clear()
            w.part_blocks = blocks
        m, resume = w.match(want)
        known = m + resume
        if known == len(want) and resume == 0:   # the full cache holds the position: exit from a scratch copy
            return self.fresh().partial_probs(ids, blocks, temperature)
        if known < len(want):                    # the positions neither cache holds, through the first blocks
            new = np.asarray(want[known:], np.int64)
            if not (0 <= new.min() and new.max() < self.V):
                raise ValueError(f"an id is {int(new[(new < 0) | (new >= self.V)][0])}, outside [0, {self.V})")
            if len(want) > w.k.shape[2]:
                self._grow(w, len(want))
            extra = Pass(stop=blocks)
            bias = self._causal[known:len(want), :len(want)]
            w.exit_logits[known:len(want)] = forward(self.folded, self.folded_layers, new,
                                                     np.arange(known, len(want)), w.k, w.v, known, bias,
                                                     self.n_head, extra)
            w.resid[known:len(want)] = extra.x
            w.part += want[known:]
        self._current = w
        return self._rows(w.exit_logits[len(want) - 1:len(want)].copy(), temperature)[0]

    def encode(self, text):
        return self.vocab.encode(text)

    def decode(self, ids):
        return self.vocab.decode(ids)


def load(path):
    """A TransformerModel from an npz written by train_transformer (float16 weights become float32)."""
    from .data import CharVocab

    with np.load(path) as f:
        params = {k: f[k] for k in param_names(int(f["n_layer"]))}
        vocab = CharVocab("".join(chr(c) for c in f["charset"]))
        return TransformerModel(params, int(f["n_head"]), int(f["context"]), int(f["hop"]), int(f["start"]), vocab)
