"""Train the Medusa heads on the target's hidden states and write them: `python -m specdec.models.train_heads`.

NumPy only, on one core (it prints how long each phase took). The corpus, vocabulary and held-out
split are `train.py`'s; the target is the shipped transformer, frozen. The data:
the target's final hidden state f_t and its rows p(. | x_{<=t}) at every position of

- the first `text` characters of the training text, and
- on-policy text: the target's own continuations of `streams` random training
  prompts, half greedy, half sampled at T = 1 (what the heads draft against).

Head k (k = 1..K) learns to match the target's row k positions later,
min over its parameters of the cross-entropy -sum_x p(x | x_{<=t+k}) log q_k(x | f_t)
(self-distillation: the best such q_k is the target's own row averaged over what
the k tokens in between may be), by Adam on mini-batches, with the gradients
written out by hand (`loss_and_grads`, checked against finite differences by
tests/library/test_heads.py). Each head's W_k, b_k start at 0 and its head at the
target's, so training starts from "head k copies the target's next-token row".
The heads are stored in float16 (`heads_medusa.npz`). A rerun writes the same
file on the same machine and NumPy build (one BLAS thread: `train.ONE_THREAD`).
It prints, per head on held-out text, E sum_x min(p(x), q_k(x)) (the chance a
draft from q_k is accepted at T = 1, if the tokens between were the text's) and
P(argmax q_k = argmax p).
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from . import transformer
from .data import CharVocab, build_charset, load_text, pydoc_text
from .heads import MedusaHeads
from .train import ONE_THREAD, Adam
from .train_draft import continuations

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = {"K": 4, "text": 200_000, "streams": 200, "prompt": 128, "stream_length": 200, "steps": 4000,
          "batch": 512, "lr": 1e-3, "seed": 0, "vocab_size": 96}


def features_and_rows(target, seq):
    """(f [len(seq), d], p [len(seq), V]): the hidden state at each position of seq and the target's row there,
    p(. | seq[:t + 1]) for t = 0..len(seq) - 1, each from its own window."""
    target.reset()
    rows = target.probs_for_positions(seq, 1).astype(np.float32)
    return target.features_for_positions(seq, 1), rows


def init_params(target, K):
    """K heads that copy the target's next-token row: W_k = 0, b_k = 0, and the target's head (float32)."""
    d = target.d
    out = {}
    for k in range(1, K + 1):
        out.update({f"{k}.w": np.zeros((d, d), np.float32), f"{k}.b": np.zeros(d, np.float32),
                    f"{k}.head_w": target.params["head.w"].copy(), f"{k}.head_b": target.params["head.b"].copy()})
    return out


def loss_and_grads(params, k, f, y):
    """(mean cross-entropy of head k on features f [B, d] against target rows y [B, V], its gradients)."""
    w, b, hw, hb = (params[f"{k}.{name}"] for name in ("w", "b", "head_w", "head_b"))
    a = f @ w + b
    s = 1.0 / (1.0 + np.exp(-a))
    h = f + a * s                                               # SiLU residual block
    z = h @ hw + hb
    z = z - z.max(1, keepdims=True)
    log_q = z - np.log(np.exp(z).sum(1, keepdims=True))
    B = len(f)
    loss = float(-(y * log_q).sum() / B)
    dz = (np.exp(log_q) * y.sum(1, keepdims=True) - y) / B       # d loss / d logits (rows of y sum to 1)
    dh = dz @ hw.T
    da = dh * (s * (1.0 + a * (1.0 - s)))                       # d SiLU(a) / da = s (1 + a (1 - s))
    return loss, {f"{k}.w": f.T @ da, f"{k}.b": da.sum(0), f"{k}.head_w": h.T @ dz, f"{k}.head_b": dz.sum(0)}


def train(F, R, ends, cfg, target):
    """Train cfg["K"] heads on features F [N, d] and rows R [N, V]; ends: the index where each sequence ends (a head
    never learns across two sequences). Returns the float32 parameters."""
    K = cfg["K"]
    params = init_params(target, K)
    adam = Adam(params, lr=cfg["lr"])
    rng = np.random.default_rng(cfg["seed"])
    seq_end = np.zeros(len(F), np.int64)                        # per position: the end of its sequence
    start = 0
    for end in ends:
        seq_end[start:end] = end
        start = end
    valid = np.flatnonzero(np.arange(len(F)) + K < seq_end)     # positions with K rows after them in their sequence
    for step in range(cfg["steps"]):
        idx = valid[rng.integers(0, len(valid), cfg["batch"])]
        grads = {}
        for k in range(1, K + 1):
            grads.update(loss_and_grads(params, k, F[idx], R[idx + k])[1])
        adam.step(grads)
    return params


def evaluate(heads, F, R):
    """Per head k: (E sum min(p, q_k), P(argmax q_k = argmax p)) on held-out features F and rows R of one text."""
    out = []
    for k in range(1, heads.K + 1):
        q = np.stack([heads.probs(f)[k - 1] for f in F[:-k]])
        p = R[k:]
        out.append((float(np.minimum(p, q).sum(1).mean()), float(np.mean(p.argmax(1) == q.argmax(1)))))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", help="a UTF-8 file to train on (default: the stdlib's doc topics)")
    parser.add_argument("--steps", type=int, default=CONFIG["steps"])
    parser.add_argument("--out", default=HERE, help="folder for heads_medusa.npz")
    args = parser.parse_args(argv)
    cfg = dict(CONFIG, steps=args.steps)

    text = load_text(args.text) if args.text else pydoc_text()
    vocab = CharVocab(build_charset(text, cfg["vocab_size"]))
    ids = vocab.encode(text)
    split = int(len(ids) * 0.95)
    train_ids, val_ids = ids[:split], ids[split:]
    target = transformer.load(os.path.join(HERE, "target_transformer.npz"))
    target.keep_features = True

    t0 = time.time()
    seqs = [train_ids[:cfg["text"]]] + continuations(target, train_ids, cfg["streams"], cfg["prompt"],
                                                     cfg["stream_length"], cfg["seed"])
    parts = [features_and_rows(target, s) for s in seqs]
    F, R = np.concatenate([f for f, _ in parts]), np.concatenate([r for _, r in parts])
    ends = np.cumsum([len(f) for f, _ in parts])
    print(f"hidden states and rows at {len(F)} positions: {cfg['text']} of training text, {len(seqs) - 1} "
          f"continuations of the target ({time.time() - t0:.0f} s)", flush=True)

    t0 = time.time()
    params = train(F, R, ends, cfg, target)
    stored = {k: v.astype(np.float16) for k, v in params.items()}
    path = os.path.join(args.out, "heads_medusa.npz")
    np.savez_compressed(path, **stored)
    heads = MedusaHeads(stored)
    print(f"{cfg['K']} heads, {sum(v.size for v in params.values())} parameters, {cfg['steps']} steps of "
          f"{cfg['batch']} ({time.time() - t0:.0f} s); {os.path.getsize(path) / 1e6:.2f} MB", flush=True)
    Fv, Rv = features_and_rows(target, val_ids[:20_000])
    for k, (accept, agree) in enumerate(evaluate(heads, Fv, Rv), start=1):
        print(f"held-out, head {k} (the id {k + 1} after the hidden state): E sum min(p, q) {accept:.4f}; "
              f"P(argmax q = argmax p) {agree:.4f}")
    print(f"wrote {path}")


if __name__ == "__main__":
    if any(os.environ.get(name) != value for name, value in ONE_THREAD.items()):
        sys.exit(subprocess.call([sys.executable, "-m", "specdec.models.train_heads", *sys.argv[1:]],
                                 env={**os.environ, **ONE_THREAD}))
    main()
