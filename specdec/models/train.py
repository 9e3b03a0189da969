"""Train both models and write the weights the package ships: `python -m specdec.models.train`.

Reproducible (fixed seed): the corpus is the stdlib's documentation topics,
the vocabulary its 95 most frequent characters plus <unk>, the last 5% is
held out. The target p is trained first, with AdamW (weight decay 0.1) on
mini-batches of (16-character window, next character) pairs by the
hand-written backprop of `mlp.loss_and_grads`: 6000 steps, about a minute.
The draft q is then distilled from it: an order-7 n-gram whose counts are p's
own predictions (`NGramModel.distil`) on the training text and on p's greedy
continuations of 1000 random training prompts, shipped with the argmax of
every row (so a greedy draft step builds no row): about 10 s. A rerun writes
both files byte for byte again on the same machine and NumPy build (BLAS runs
on one thread: see `ONE_THREAD`). `--draft-only` keeps the shipped target and
rebuilds only the draft, byte for byte the shipped file (`target_probs` says how).

The target has 896 hidden units, not more, for speed: each position a call
scores reads the hidden layer's rows of the folded table and the whole output
matrix (`mlp.MLPModel.logits`), so at 2048 units scoring gamma + 1 = 6 positions
cost 3.6 one-position calls and speculative decoding gained at most ~1.45x;
at 896 units (held-out loss 1.200 against 1.175 nats/char) it costs 3.0.

    >>> adam = Adam({"w": np.zeros(2, np.float32)}, lr=0.1)
    >>> adam.step({"w": np.array([1.0, -2.0], np.float32)}); adam.params["w"].tolist()  # first step: -lr * sign
    [-0.10000000149011612, 0.10000000149011612]
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from . import mlp
from .data import CharVocab, build_charset, load_text, pydoc_text
from .distil import pack_soft, unpack_soft
from .ngram import NGramModel

HERE = os.path.dirname(os.path.abspath(__file__))
# Subtle: a float32 BLAS product may round differently with the number of threads it is split over (with
# OpenBLAS, 1 and 2 threads give gradients that differ in the last bit), and after 6000 steps so do the
# weights. So training runs BLAS on one thread: `python -m` re-runs itself with these set, since NumPy
# reads them once, at import, before this module runs.
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "VECLIB_MAXIMUM_THREADS": "1"}
CONFIG = {"context": 16, "embed": 24, "hidden": 896, "vocab_size": 96,
          "order": 7, "min_share": 0.02, "streams": 1000, "stream_length": 200,  # the distilled draft
          "steps": 6000, "batch": 256, "lr": 2e-3, "lr_final": 1e-4, "weight_decay": 0.1, "seed": 0}


class Adam:
    """Adam (Kingma & Ba 2015) with bias correction, updating `params` in place.

    weight_decay > 0 shrinks the weight matrices (not biases) by lr * weight_decay per step,
    decoupled from the gradient (AdamW, Loshchilov & Hutter 2019).
    """

    def __init__(self, params, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
        self.params, self.lr, self.b1, self.b2, self.eps, self.t = params, lr, beta1, beta2, eps, 0
        self.weight_decay = weight_decay
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, grads):
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for k, g in grads.items():
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * g * g
            update = self.lr * (self.m[k] / c1) / (np.sqrt(self.v[k] / c2) + self.eps)
            if self.weight_decay and self.params[k].ndim > 1:
                update = update + self.lr * self.weight_decay * self.params[k]
            self.params[k] -= update.astype(self.params[k].dtype)


def windows_and_targets(ids, context, pad):
    """All (window, next id) training pairs of `ids`: [N, context] windows and [N] targets."""
    padded = np.concatenate([np.full(context, pad, np.int64), np.asarray(ids, np.int64)])
    return np.lib.stride_tricks.sliding_window_view(padded[:-1], context), padded[context:]


def mean_loss(params, X, y, batch=4096):
    """Mean cross-entropy over all pairs, in chunks."""
    total = 0.0
    for i in range(0, len(y), batch):
        total += mlp.loss_and_grads(params, X[i:i + batch], y[i:i + batch])[0] * len(y[i:i + batch])
    return total / len(y)


def target_probs(target, X, batch=512):
    """p(. | window) for every row of X [N, n], float64: the shipped target's arithmetic, reproducibly.

    `MLPModel.logits`, except that the n window slots' rows of the folded table are gathered and
    added one slot at a time (the same sums in the same order, without a [batch, n, hidden] array),
    and the head is one float64 matrix product per batch. Subtle: a float32 BLAS product rounds
    differently with the number of BLAS threads, and flooring the shares to 1/255 turned those
    last-bit differences into different files; in float64 they stay ~1e-16, far from any floor.
    """
    out = np.empty((len(X), target.V))
    for i in range(0, len(X), batch):
        windows = X[i:i + batch] + target._slot             # [B, n] rows of the folded table
        a = target._folded[windows[:, 0]]
        for j in range(1, windows.shape[1]):
            a += target._folded[windows[:, j]]              # [B, hidden] float32
        z = np.tanh(a + target._b1).astype(np.float64) @ target._W2.astype(np.float64) + target._b2
        z -= z.max(1, keepdims=True)
        np.exp(z, out=z)
        out[i:i + batch] = z / z.sum(1, keepdims=True)
    return out


def unique_windows(X):
    """(the distinct rows U of X [N, n], index [N]) with X == U[index], U sorted by bytes."""
    small = np.ascontiguousarray(X, np.uint8 if X.max() < 256 else np.int64)
    _, first, index = np.unique(small.view(f"V{small.shape[1] * small.itemsize}").ravel(), return_index=True,
                                return_inverse=True)
    return np.asarray(X)[first], index.ravel()


def greedy_continuations(target, ids, streams, length, seed=0):
    """The target's greedy continuations of `streams` random `target.context`-id prompts from `ids`, batched.

    One list: each prompt followed by its `length` continuation ids.
    """
    context = target.context
    rng = np.random.default_rng(seed)
    starts = rng.integers(context, len(ids) - context, streams)
    seq = np.array([ids[s - context:s] for s in starts], np.int64)
    for _ in range(length):
        seq = np.concatenate([seq, target_probs(target, seq[:, -context:]).argmax(1)[:, None]], 1)
    return seq.ravel().tolist()


def train_mlp(ids, vocab_size, context, embed, hidden, steps, batch, lr, lr_final=None, seed=0,
              pad=0, progress=False, weight_decay=0.0):
    """Train the MLP with Adam (cosine decay lr -> lr_final); return (params, list of batch losses)."""
    rng = np.random.default_rng(seed)
    params = mlp.init_params(vocab_size, context, embed, hidden, seed)
    X, y = windows_and_targets(ids, context, pad)
    adam = Adam(params, lr, weight_decay=weight_decay)
    lr_final = lr if lr_final is None else lr_final
    losses = []
    bar = range(steps)
    if progress:
        from tqdm import tqdm
        bar = tqdm(bar, desc="target MLP", unit="step")
    for step in bar:
        adam.lr = lr_final + 0.5 * (lr - lr_final) * (1 + np.cos(np.pi * step / max(steps, 1)))
        idx = rng.integers(0, len(y), batch)
        loss, grads = mlp.loss_and_grads(params, X[idx], y[idx])
        adam.step(grads)
        losses.append(float(loss))
        if progress and step % 50 == 0:
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}", lr=f"{adam.lr:.1e}")
    return params, losses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", help="a UTF-8 file to train on (default: the stdlib's doc topics)")
    parser.add_argument("--steps", type=int, default=CONFIG["steps"])
    parser.add_argument("--hidden", type=int, default=CONFIG["hidden"])
    parser.add_argument("--weight-decay", type=float, default=CONFIG["weight_decay"])
    parser.add_argument("--order", type=int, default=CONFIG["order"], help="n-gram order of the draft")
    parser.add_argument("--streams", type=int, default=CONFIG["streams"],
                        help="greedy continuations of the target the draft is distilled on (on-policy data)")
    parser.add_argument("--draft-only", action="store_true",
                        help="keep the target in --out, rebuild only the (distilled) draft")
    parser.add_argument("--out", default=HERE, help="folder for draft_ngram.npz and target_mlp.npz")
    args = parser.parse_args(argv)
    cfg = dict(CONFIG, steps=args.steps, hidden=args.hidden, weight_decay=args.weight_decay, order=args.order,
               streams=args.streams)

    text = load_text(args.text) if args.text else pydoc_text()
    vocab = CharVocab(build_charset(text, cfg["vocab_size"]))
    ids = vocab.encode(text)
    pad = vocab.stoi["\n"]
    split = int(len(ids) * 0.95)
    train_ids, val_ids = ids[:split], ids[split:]
    charset = np.array([ord(ch) for ch in vocab.charset], np.int32)
    print(f"corpus: {len(ids)} characters, vocabulary {len(vocab)}, train {len(train_ids)}, held out {len(val_ids)}")

    Xv, yv = windows_and_targets(val_ids, cfg["context"], pad)
    target_path = os.path.join(args.out, "target_mlp.npz")
    if args.draft_only:
        with np.load(target_path) as f:
            rounded = {k: f[k].astype(np.float32) for k in mlp.PARAM_NAMES}
        print(f"target: loaded {target_path}, held-out loss {mean_loss(rounded, Xv, yv):.4f} nats/char")
    else:
        t0 = time.time()
        params, losses = train_mlp(train_ids, len(vocab), cfg["context"], cfg["embed"], cfg["hidden"], cfg["steps"],
                                   cfg["batch"], cfg["lr"], cfg["lr_final"], cfg["seed"], pad=pad, progress=True,
                                   weight_decay=cfg["weight_decay"])
        minutes = (time.time() - t0) / 60
        # Stored as float16 (half the bytes); the shipped model is exactly these rounded weights.
        stored = {k: v.astype(np.float16) for k, v in params.items()}
        rounded = {k: v.astype(np.float32) for k, v in stored.items()}
        Xt, yt = windows_and_targets(train_ids, cfg["context"], pad)
        sub = np.random.default_rng(1).integers(0, len(yt), 50_000)
        print(f"target: {minutes:.1f} min, final batch loss {np.mean(losses[-100:]):.4f}; float16 weights: "
              f"train loss {mean_loss(rounded, Xt[sub], yt[sub]):.4f}, held-out loss "
              f"{mean_loss(rounded, Xv, yv):.4f} nats/char")
        np.savez_compressed(target_path, **stored, context=cfg["context"], pad=pad, charset=charset)

    # The draft is distilled from the shipped (float16-rounded) target, on the training text plus the
    # target's own greedy continuations of random training prompts (on-policy data, as in DistillSpec).
    t0 = time.time()
    target = mlp.MLPModel(rounded, cfg["context"], pad=pad)
    text_ids = list(train_ids) + greedy_continuations(target, train_ids, cfg["streams"], cfg["stream_length"],
                                                      cfg["seed"])
    X, _ = windows_and_targets(text_ids, cfg["context"], pad)
    windows, position = unique_windows(X)               # a third of the windows repeat: score each once
    distilled = NGramModel.distil(text_ids, target_probs(target, windows)[position], len(vocab), cfg["order"],
                                  pad=pad, min_share=cfg["min_share"])
    stored = dict(keys=distilled.keys, counts=distilled.counts.astype(np.int32),
                  **pack_soft(distilled.soft, len(vocab)))
    # The shipped draft is exactly these rounded shares. Its greedy step is argmax q of the context's row,
    # stored for every row (one byte each), so greedy drafting never builds a row.
    draft = NGramModel(stored["keys"], stored["counts"], len(vocab), cfg["order"], pad,
                       soft=unpack_soft(stored, len(vocab)))
    stored["best"] = draft.dense_table().argmax(1).astype(np.uint8)
    np.savez_compressed(os.path.join(args.out, "draft_ngram.npz"), **stored, order=cfg["order"], pad=pad,
                        charset=charset)
    rows = draft.next_token_probs([val_ids[max(0, i - 8):i] for i in range(len(val_ids))])
    p_val = target_probs(target, Xv)
    print(f"draft: order-{cfg['order']} n-gram distilled from the target on {len(text_ids)} characters, "
          f"{len(draft.keys)} distinct n-grams, {len(stored['soft_share'])} soft counts ({time.time() - t0:.1f} s); "
          f"on held-out text: argmax q = argmax p {np.mean(rows.argmax(1) == p_val.argmax(1)):.4f}, "
          f"sum min(p, q) {np.minimum(rows, p_val).sum(1).mean():.4f}")
    print(f"wrote {args.out}/draft_ngram.npz" + ("" if args.draft_only else " and target_mlp.npz"))


if __name__ == "__main__":
    if any(os.environ.get(name) != value for name, value in ONE_THREAD.items()):
        sys.exit(subprocess.call([sys.executable, "-m", "specdec.models.train", *sys.argv[1:]],
                                 env={**os.environ, **ONE_THREAD}))
    main()
