"""A memory-bound stand-in target: the MLP's outputs at the cost of a model whose weights stream from memory.

A SIMULATION, used by lesson 09. The course's targets (the MLP, `mlp.py`, 1.7 MB
of float32 weights; the transformer, `transformer.py`, 7.1 MB) fit in the
processor's cache, so their cost grows with the positions they score. A large
language model does not fit: each call streams all its weights from memory, and
a few more positions cost little more. No such model ships here, so this
wrapper fakes only its cost: every call first multiplies a weight matrix W of
`megabytes` MB (the product is thrown away), then returns exactly what the
wrapped target returns. Tokens, alpha and every acceptance are therefore the
wrapped target's; only the clock sees a bigger model.

    mode="stream"   one pass over W per call (1 x width @ W), whatever the number
                    of positions: what a kernel that reads each weight once per
                    call achieves while memory, not arithmetic, is the bound
    mode="matmul"   x @ W with one row of x per scored position: what NumPy's own
                    matrix product costs for that many rows on this machine

    >>> from specdec.models import load_pretrained
    >>> _, target = load_pretrained(target="mlp")
    >>> big = MemoryBoundTarget(target, megabytes=2)
    >>> ids = target.encode("The ")
    >>> bool((big.probs_for_positions(ids, 2) == target.probs_for_positions(ids, 2)).all()), big.V
    (True, 96)
"""

import numpy as np

MODES = ("stream", "matmul")


class MemoryBoundTarget:
    """`target`'s probabilities; per call, the memory traffic of `megabytes` MB of float32 weights."""

    def __init__(self, target, megabytes, mode="stream", width=2048):
        if mode not in MODES:
            raise ValueError(f"mode is {mode!r}; choose one of {MODES}")
        if not megabytes > 0:
            raise ValueError(f"megabytes is {megabytes!r}, it must be > 0")
        self.target, self.mode, self.V = target, mode, target.V
        columns = max(1, int(round(megabytes * 2 ** 20 / (width * 4))))
        # np.full writes every page: a never-written array could be the kernel's shared zero page, read from cache
        self.W = np.full((width, columns), 0.5, np.float32)                 # [width, columns], megabytes MB
        self.megabytes = self.W.nbytes / 2 ** 20
        self._x = {}                                                       # rows -> the [rows, width] input

    def _traffic(self, positions):
        rows = 1 if self.mode == "stream" else positions
        x = self._x.get(rows)
        if x is None:
            x = self._x[rows] = np.full((rows, self.W.shape[0]), 0.25, np.float32)
        x @ self.W                                                    # [rows, width] @ [width, columns]: discarded

    def probs_for_positions(self, ids, start, temperature=1.0):
        """Exactly target.probs_for_positions(ids, start, temperature), plus the memory traffic."""
        rows = self.target.probs_for_positions(ids, start, temperature)      # [positions, V]; checks the input
        self._traffic(len(rows))
        return rows

    def probs_for_tree(self, ids, parents, tokens, temperature=1.0):
        """Exactly target.probs_for_tree(ids, parents, tokens, temperature), plus the memory traffic."""
        rows = self.target.probs_for_tree(ids, parents, tokens, temperature)  # [nodes + 1, V]
        self._traffic(len(rows))
        return rows

    def next_token_probs(self, contexts, temperature=1.0):
        """Exactly target.next_token_probs(contexts, temperature), plus the memory traffic."""
        rows = self.target.next_token_probs(contexts, temperature)
        self._traffic(len(rows))
        return rows

    def encode(self, text):
        return self.target.encode(text)

    def decode(self, ids):
        return self.target.decode(ids)
