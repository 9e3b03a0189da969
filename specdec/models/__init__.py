"""Real character-level language models for end-to-end speculative decoding.

    target p  a small GPT-style decoder-only transformer over 256 characters with a KV cache
              that rolls back (`transformer.py`): 4 layers, d = 192, trained in PyTorch by
              `train_transformer.py` (a training-only dependency, requirements-train.txt), run in NumPy
    draft q   an order-7 character n-gram, Witten-Bell interpolated, distilled from p
              (`ngram.py`, `distil.py`, `train_draft.py`), each row cut to its 8 likeliest ids
              (`topk.py`), so a sampled draft step costs about what a greedy one does

`load_pretrained()` returns (draft, target). `load_pretrained(target="mlp")` pairs
the draft with the course's first target, a Bengio-style MLP over 16 characters
(`mlp.py`, trained with hand-written backprop by `train.py`): a call costs a small
fraction of the transformer's, which is what the test suite and the exact lessons want,
and its cost grows with every position it scores (lesson 09 measures both).

Where else drafts come from (lesson 13): `lookup.py`, prompt lookup (no model:
the continuation of the text's own last ids, seen earlier); `heads.py`, Medusa
heads on the transformer's last hidden state (trained in NumPy by
`train_heads.py`, shipped as heads_medusa.npz, `load_heads()`); `early_exit.py`,
the transformer's first blocks as its own draft, sharing its KV cache.

`standin.py` wraps a target into a memory-bound stand-in (p's outputs at the cost of a
model streamed from memory), a simulation for lesson 09.

All read the same 96-id character vocabulary (`data.py`) and were trained on
the prose of Python's own documentation, which every Python ships. The
weights are committed next to this file; the four training modules rebuild them.

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
from .topk import TopKDraft
from . import transformer
from .transformer import TransformerModel
from .heads import load_heads

HERE = os.path.dirname(os.path.abspath(__file__))

__all__ = ["CharVocab", "MLPModel", "NGramModel", "TopKDraft", "TransformerModel", "load_draft", "load_heads",
           "load_pretrained", "load_transformer"]
TARGETS = ("mlp", "transformer")


def _vocab(npz):
    return CharVocab("".join(chr(c) for c in npz["charset"]))


def load_transformer(directory=HERE):
    """The transformer target from target_transformer.npz in `directory` (float16 weights, run in float32)."""
    return transformer.load(os.path.join(directory, "target_transformer.npz"))


def load_draft(directory=HERE):
    """The shipped draft from draft_ngram.npz: a TopKDraft (`topk.py`), the n-gram's rows cut to k ids.

    Its n-gram, with its full rows, is `draft.ngram`.
    """
    with np.load(os.path.join(directory, "draft_ngram.npz")) as f:
        V = len(f["charset"]) + 1
        soft = unpack_soft(f, V) if "soft_share" in f else None
        top_ids = f["top_ids"]
        ngram = NGramModel(f["keys"], f["counts"], V, int(f["order"]), pad=int(f["pad"]), vocab=_vocab(f),
                           soft=soft, best=top_ids[:, 0])     # the likeliest id first: argmax q, ties to the lower
        return TopKDraft(ngram, top_ids, f["top_q"])


def load_pretrained(directory=HERE, target="transformer"):
    """(draft, target) from draft_ngram.npz and, for the target, target_transformer.npz (the default,
    `load_transformer()`) or target_mlp.npz (target="mlp"), in `directory`; ~0.3 s, no row is built.
    """
    if target not in TARGETS:
        raise ValueError(f"target is {target!r}; choose one of {', '.join(map(repr, TARGETS))}")
    draft = load_draft(directory)
    if target == "transformer":
        model = load_transformer(directory)
    else:
        with np.load(os.path.join(directory, "target_mlp.npz")) as f:
            model = MLPModel({k: f[k] for k in PARAM_NAMES}, int(f["context"]), pad=int(f["pad"]), vocab=_vocab(f))
    if draft.vocab.charset != model.vocab.charset:
        raise ValueError("the draft and the target were trained with different vocabularies")
    return draft, model
