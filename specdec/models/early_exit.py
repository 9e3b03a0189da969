"""Early exit (self-speculation): the target's first blocks, its final LayerNorm and its head are the draft.

LayerSkip (Elhoushi et al. 2024) and Draft & Verify (Zhang et al. 2024) draft
with the target itself: run only its first `blocks` of n_layer blocks on the new
position, then the final LayerNorm and the head, and read a row there. No second
model, no second vocabulary, and the KV cache is shared: the keys and values the
draft computed in those blocks are the target's own (the same weights on the same
inputs), so the verification call starts each drafted position at block `blocks`
(`TransformerModel.partial_probs`; the position the draft never saw, the last
draft, goes through every block).

What it costs, c: a draft step is a call through `blocks` of n_layer blocks,
so c is about blocks / n_layer of a one-position call, plus the head, far above
the n-gram's c; what it saves: the verification skips those blocks for
gamma positions. Whether that pays depends on alpha, which the shipped target
was not trained for (LayerSkip trains its layers to exit early): lesson 13
measures both, on this CPU and on a cost model where a call costs the weights it
reads.

    >>> from specdec.models import load_transformer
    >>> target = load_transformer()
    >>> draft = EarlyExitDraft(target, blocks=2)
    >>> x, q = draft.propose(target.encode("The "), 1.0, np.random.default_rng(0))
    >>> q.shape, round(float(q.sum()), 9)
    ((96,), 1.0)
"""

import numpy as np

from ..generation.rows import sample_index


class EarlyExitDraft:
    """The Draft interface over the first `blocks` blocks of `target` (a TransformerModel), sharing its cache."""

    def __init__(self, target, blocks):
        if not 1 <= blocks < target.n_layer:
            raise ValueError(f"blocks is {blocks}: an early exit runs 1 to n_layer - 1 = {target.n_layer - 1} of "
                             f"the target's {target.n_layer} blocks")
        self.target, self.blocks, self.V = target, int(blocks), target.V
        self.vocab = target.vocab

    def propose(self, context, temperature, rng):
        q = self.target.partial_probs(context, self.blocks, temperature or 1.0)
        return (int(np.argmax(q)) if temperature == 0 else sample_index(q, rng)), q

    def argmax_next(self, context):
        return int(np.argmax(self.target.partial_probs(context, self.blocks)))

    def next_token_probs(self, contexts, temperature=1.0):
        return np.stack([self.target.partial_probs(c, self.blocks, temperature) for c in contexts])
