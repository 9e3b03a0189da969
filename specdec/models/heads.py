"""Medusa heads: small heads on the target's last hidden state that guess the tokens after the next one.

Medusa (Cai et al. 2024) adds K heads to the target. The target's own head reads
the final hidden state f_t (after the final LayerNorm) and gives p(x_{t+1}); head k
reads the same f_t and guesses x_{t+1+k}, k = 1..K, without knowing the tokens in
between. Each head is one residual block and a head of its own (Medusa-1):

    a = f W_k + b_k;   h = f + a sigmoid(a)  (SiLU);   q_k = softmax(h H_k + c_k)

trained by `train_heads.py` (NumPy) on the frozen target's hidden states, to match
the target's own row k positions later (self-distillation), with H_k, c_k started
from the target's head. The shipped `heads_medusa.npz` has K = 4 heads, float16, 0.4 MB.

A draft that costs almost nothing. The verification call that settles a step
already computes the hidden state of its last position (the target keeps it:
`TransformerModel.keep_features`); the heads read it (a few small products, no call
of any model) and propose the next step: x_{t+1} is the token the target emitted
there, and head k's row is the draft row for the k-th position after it. The same
row serves every node at depth k of a tree, since a head does not see the path.
`HeadsDraft` proposes a chain (each head's likeliest id, or a draw from each head's
row) or a tree (`trees.threshold_tree`: several candidates where a head hesitates),
verified by the course's rules: the token rule and recursive rejection are lossless
at any temperature; Medusa's typical acceptance (`verify="typical_tree"`) is not.

    >>> from specdec.models import load_transformer
    >>> target = load_transformer()
    >>> draft = HeadsDraft(target, load_heads())
    >>> ids = target.encode("If the value of the express")
    >>> draft.chain(ids, 4, 0.0, None)                    # the target has not read ids yet: no hidden state
    ([], None)
    >>> rows = target.probs_for_positions(ids, len(ids))  # (a verification call, in decoding)
    >>> tokens, rows = draft.chain(ids, 4, 0.0, None)
    >>> target.decode(tokens), rows                       # heads 1..4 at T = 0: each head's likeliest id
    ('ion ', None)

A head does not see the id the target emitted before its position: head 1 guesses
what follows the target's likeliest next id, which is why the heads agree less
often when that id was a sample at T = 1, or a prompt's own character.
"""

import os

import numpy as np

from ..generation.rows import sample_index, tempered_probs
from ..generation.trees import threshold_tree

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("w", "b", "head_w", "head_b")


class MedusaHeads:
    """K heads over features f [d]: rows q_k(x_{t+1+k} | f_t), k = 1..K (module docstring)."""

    def __init__(self, params):
        self.K = sum(1 for name in params if name.endswith(".w"))
        get = lambda name: np.stack([np.asarray(params[f"{k}.{name}"], np.float32) for k in range(1, self.K + 1)])
        # [K, d, d], [K, d], [K, d, V], [K, V]
        self.w, self.b, self.head_w, self.head_b = (get(name) for name in NAMES)
        self.d, self.V = self.head_w.shape[1:]
        self._w_all = np.ascontiguousarray(self.w.transpose(1, 0, 2).reshape(self.d, self.K * self.d))

    def logits(self, f):
        """[K, V] logits of the K heads at the feature f [d] (all heads in two products)."""
        a = (f @ self._w_all).reshape(self.K, self.d) + self.b         # [K, d]
        h = f + a / (1.0 + np.exp(-a))                                   # the residual block, SiLU
        return (h[:, None, :] @ self.head_w)[:, 0, :] + self.head_b     # [K, V]

    def probs(self, f, temperature=1.0):
        """[K, V] rows q_k at temperature T > 0 (float64, as the models' rows)."""
        return tempered_probs(self.logits(f).astype(np.float64), temperature)


def load_heads(directory=HERE):
    """The shipped heads, heads_medusa.npz (written by `python -m specdec.models.train_heads`)."""
    with np.load(os.path.join(directory, "heads_medusa.npz")) as f:
        return MedusaHeads({k: f[k] for k in f.files if "." in k})


class HeadsDraft:
    """A chain and tree draft (`generation.interface`) from the heads, reading the target's hidden states.

    `threshold`: a tree keeps the candidates whose path the heads find at least this likely
    (`trees.threshold_tree`). The target's keep_features is switched on.
    """

    def __init__(self, target, heads, threshold=0.1):
        if heads.d != target.d or heads.V != target.V:
            raise ValueError(f"the heads read d = {heads.d} features and give V = {heads.V} ids; the target has "
                             f"d = {target.d}, V = {target.V}")
        self.target, self.heads, self.threshold, self.V = target, heads, float(threshold), target.V
        target.keep_features = True

    def rows(self, ids, temperature):
        """[K, V]: head k's row for the k-th id after ids, from the hidden state that gave ids[-1]; None if the target
        has not computed it (the first step of a generation: it then drafts nothing, and its call computes it)."""
        f = self.target.features(list(ids[:-1]), compute=False) if ids else None
        return None if f is None else self.heads.probs(f, temperature or 1.0)

    def chain(self, ids, gamma, temperature, rng):
        """(min(gamma, K) ids, their rows; None at T = 0): each head's likeliest id, or a draw from each head."""
        g = min(gamma, self.heads.K)
        rows = self.rows(ids, temperature) if g else None
        if rows is None:
            return [], None if temperature == 0 else []
        rows = rows[:g]
        if temperature == 0:
            return [int(x) for x in rows.argmax(1)], None
        return [sample_index(row, rng) for row in rows], list(rows)

    def tree(self, ids, depth, width, temperature, rng):
        """(tokens, parents, q_rows, draft contexts): a `threshold_tree` over the heads' rows, at most K levels."""
        rows = self.rows(ids, temperature)
        if rows is None:
            return [], [], [None], 0
        return threshold_tree(lambda paths: [rows[len(p)] for p in paths], self.threshold, min(depth, self.heads.K),
                              width, temperature, rng)
