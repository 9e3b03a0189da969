"""Distil the draft q from the transformer target and write it: `python -m specdec.models.train_draft`.

NumPy only, on one core (it prints how long each phase took). The corpus, vocabulary and held-out
split are `train.py`'s. The draft is an order-7 character n-gram whose counts
are the target's own predictions (`NGramModel.distil`, after DistillSpec, Zhou
et al. 2023): soft counts from p(. | context) at every position of

- the training text, each position read from its window (`transformer.py`), and
- on-policy text: the target's own continuations of `streams` random training
  prompts, half greedy, half sampled at T = 1, so the draft also learns what p
  says about the text p writes, which is what it drafts against when it decodes.

Each row of the distilled n-gram is then cut to its `k` likeliest ids
(`topk.top_entries`), and those are what ships (`topk.TopKDraft`): a draft
step is a lookup and a draw from k numbers, at any temperature.
`draft_ngram.npz` holds the n-gram's counts and shares (floored to 1/255,
`distil.pack_soft`) and each row's k ids and q values (float16). A rerun writes
the same file on the same machine and NumPy build (one BLAS thread:
`train.ONE_THREAD`). It prints the acceptance rate the draft reaches against
the target on held-out text, E[sum_x min(p(x), q(x))] at T = 1 and
P(argmax q = argmax p) at T = 0, for the cut draft and the uncut n-gram.
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from . import transformer
from .data import CharVocab, build_charset, load_text, pydoc_text
from .distil import pack_soft, unpack_soft
from .ngram import NGramModel
from .topk import TopKDraft, top_entries
from .train import ONE_THREAD

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = {"order": 7, "min_share": 0.02, "k": 8, "streams": 300, "prompt": 128, "stream_length": 200, "seed": 0,
          "vocab_size": 96}


def continuations(target, ids, streams, prompt, length, seed=0):
    """The target's continuations of `streams` random `prompt`-id slices of ids: even streams greedy, odd at T = 1.

    A list of id lists, each a prompt followed by its `length` new ids.
    """
    from ..generation.decode import autoregressive_generate

    rng = np.random.default_rng(seed)
    out = []
    for i, s in enumerate(rng.integers(0, len(ids) - prompt, streams)):
        p = [int(t) for t in ids[s:s + prompt]]
        out.append(p + autoregressive_generate(target, p, length, temperature=float(i % 2), rng=rng))
    return out


def agreement(draft, target, ids):
    """(E sum min(p, q) at T = 1, P(argmax q = argmax p)) over the positions of ids after the first 8."""
    ids = [int(t) for t in ids]
    p = target.probs_for_positions(ids, 9)[:-1]
    q = draft.next_token_probs([ids[t - 8:t] for t in range(9, len(ids) + 1)][:len(p)], 1.0)
    return float(np.minimum(p, q).sum(1).mean()), float(np.mean(p.argmax(1) == q.argmax(1)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", help="a UTF-8 file to train on (default: the stdlib's doc topics)")
    parser.add_argument("--k", type=int, default=CONFIG["k"], help="ids kept per row of the shipped draft")
    parser.add_argument("--streams", type=int, default=CONFIG["streams"], help="on-policy continuations of p")
    parser.add_argument("--out", default=HERE, help="folder for draft_ngram.npz")
    args = parser.parse_args(argv)
    cfg = dict(CONFIG, k=args.k, streams=args.streams)

    text = load_text(args.text) if args.text else pydoc_text()
    vocab = CharVocab(build_charset(text, cfg["vocab_size"]))
    ids = vocab.encode(text)
    pad, V = vocab.stoi["\n"], len(vocab)
    split = int(len(ids) * 0.95)
    train_ids, val_ids = ids[:split], ids[split:]
    target = transformer.load(os.path.join(HERE, "target_transformer.npz"))

    t0 = time.time()
    streams = continuations(target, train_ids, cfg["streams"], cfg["prompt"], cfg["stream_length"], cfg["seed"])
    text_ids, rows = list(train_ids), [target.probs_for_positions(train_ids, 0)[:-1]]
    for s in streams:
        text_ids += s
        rows.append(target.probs_for_positions(s, 0)[:-1])
    print(f"target rows on {len(train_ids)} training and {len(text_ids) - len(train_ids)} on-policy characters "
          f"({time.time() - t0:.0f} s)", flush=True)

    t0 = time.time()
    distilled = NGramModel.distil(text_ids, np.concatenate(rows), V, cfg["order"], pad=pad,
                                  min_share=cfg["min_share"])
    del rows
    stored = dict(keys=distilled.keys, counts=distilled.counts.astype(np.int32), **pack_soft(distilled.soft, V))
    ngram = NGramModel(stored["keys"], stored["counts"], V, cfg["order"], pad, soft=unpack_soft(stored, V))
    stored["top_ids"], stored["top_q"] = top_entries(ngram, cfg["k"])
    charset = np.array([ord(ch) for ch in vocab.charset], np.int32)
    path = os.path.join(args.out, "draft_ngram.npz")
    np.savez_compressed(path, **stored, order=cfg["order"], pad=pad, charset=charset)
    ngram = NGramModel(stored["keys"], stored["counts"], V, cfg["order"], pad, vocab=vocab,
                       soft=unpack_soft(stored, V), best=stored["top_ids"][:, 0])
    draft = TopKDraft(ngram, stored["top_ids"], stored["top_q"])
    print(f"draft: order-{cfg['order']} n-gram, {len(ngram.keys)} distinct n-grams, {len(stored['soft_share'])} "
          f"soft counts, {len(ngram.table)} rows cut to {cfg['k']} ids ({time.time() - t0:.0f} s); "
          f"{os.path.getsize(path) / 1e6:.2f} MB")
    held = val_ids[:20_000]
    for name, model in (("cut to k ids (shipped)", draft), ("uncut n-gram", ngram)):
        a1, a0 = agreement(model, target, held)
        print(f"held-out, {name}: E sum min(p, q) at T = 1 {a1:.4f}; P(argmax q = argmax p) {a0:.4f}")
    print(f"wrote {path}")


if __name__ == "__main__":
    if any(os.environ.get(name) != value for name, value in ONE_THREAD.items()):
        sys.exit(subprocess.call([sys.executable, "-m", "specdec.models.train_draft", *sys.argv[1:]],
                                 env={**os.environ, **ONE_THREAD}))
    main()
