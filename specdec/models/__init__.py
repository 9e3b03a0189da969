"""Two real character-level language models for end-to-end speculative decoding.

    draft q   an order-7 character n-gram, Witten-Bell interpolated, distilled from p (`ngram.py`,
              `distil.py`): a greedy step is a dict lookup and a stored argmax, on any text
    target p  a Bengio-style MLP over 16 characters, 896 tanh units (`mlp.py`), trained with
              hand-written backprop and Adam (`train.py`)

and a second target, `load_transformer()`: a small GPT-style decoder over 256 characters
with a KV cache that rolls back (`transformer.py`), trained in PyTorch by
`train_transformer.py` (a training-only dependency, requirements-train.txt) and run in
NumPy; `load_pretrained(target="transformer")` pairs it with the draft.

`standin.py` wraps p into a memory-bound stand-in (p's outputs at the cost of a
model streamed from memory), a simulation for lesson 09.

Both read the same 96-id character vocabulary (`data.py`) and were trained on
the prose of Python's own documentation, which every Python ships. The
weights are committed next to this file; `python -m specdec.models.train`
rebuilds them.

    >>> draft, target = load_pretrained()
    >>> ids = target.encode("The ")
    >>> target.decode(ids), target.probs_for_positions(ids, len(ids)).shape
    ('The ', (1, 96))
"""

import os

import numpy as np

from .data import CharVocab
from .mlp import PARAM_NAMES, MLPModel
from .distil import unpack_soft
from .ngram import NGramModel
from . import transformer
from .transformer import TransformerModel

HERE = os.path.dirname(os.path.abspath(__file__))

__all__ = ["CharVocab", "MLPModel", "NGramModel", "TransformerModel", "load_pretrained", "load_transformer"]
TARGETS = ("mlp", "transformer")


def _vocab(npz):
    return CharVocab("".join(chr(c) for c in npz["charset"]))


def load_transformer(directory=HERE):
    """The transformer target from target_transformer.npz in `directory` (float16 weights, run in float32)."""
    return transformer.load(os.path.join(directory, "target_transformer.npz"))


def load_pretrained(directory=HERE, target="mlp"):
    """(draft, target) from draft_ngram.npz and target_mlp.npz in `directory` (~0.3 s: no table is built).

    target="transformer": the target is `load_transformer()`'s, from target_transformer.npz.
    """
    if target not in TARGETS:
        raise ValueError(f"target is {target!r}; choose one of {', '.join(map(repr, TARGETS))}")
    with np.load(os.path.join(directory, "draft_ngram.npz")) as f:
        soft = unpack_soft(f, len(f["charset"]) + 1) if "soft_share" in f else None
        draft = NGramModel(f["keys"], f["counts"], len(f["charset"]) + 1, int(f["order"]), pad=int(f["pad"]),
                           vocab=_vocab(f), soft=soft, best=f["best"] if "best" in f else None)
    if target == "transformer":
        model = load_transformer(directory)
    else:
        with np.load(os.path.join(directory, "target_mlp.npz")) as f:
            model = MLPModel({k: f[k] for k in PARAM_NAMES}, int(f["context"]), pad=int(f["pad"]), vocab=_vocab(f))
    if draft.vocab.charset != model.vocab.charset:
        raise ValueError("the draft and the target were trained with different vocabularies")
    return draft, model
