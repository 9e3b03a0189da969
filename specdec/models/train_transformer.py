"""Train the transformer target and write its weights: `python -m specdec.models.train_transformer`.

Training only: it needs PyTorch (CPU), which the course does not
(`pip install -r requirements-train.txt`); the shipped model runs in NumPy
(`transformer.py`). The same corpus, vocabulary and held-out split as
`train.py`: the stdlib's documentation topics, their 95 most frequent
characters plus <unk>, the last 5% held out.

The network is `transformer.py`'s, written a second time in PyTorch
(`torch_logits`) with the same parameter names, initialised by the same
`transformer.init_params`. Each batch holds windows of `context` = 256
training characters at random offsets, after the start symbol, predicting
every next character (context + 1 targets per window). AdamW, linear warmup
then cosine decay, gradient clipping, dropout on the residual branches. Then:

- the weights are stored in float16 (`target_transformer.npz`, about 3.5 MB);
- the held-out loss is reported for the transformer, computed by the shipped
  NumPy model from those float16 weights (each held-out position from its
  window, as `TransformerModel.window_start` says), and for the shipped MLP
  (`target_mlp.npz`) on the same held-out characters, in nats per character.

Reproducible: fixed seeds, and PyTorch on `--threads` threads (default 1; a
different thread count sums some gradients in another order and ends with
other weights). The shipped file: 2000 steps of 16 windows (8.2 M characters,
about 19 passes over the training text), 35.6 minutes at nice 19 on one core
of a busy 2-core machine (about 0.7 s a step on an idle core, so ~25 minutes);
held-out loss 0.956 nats/char (float32 and float16 weights alike), the MLP's
1.200. Training loss was still falling: more steps would buy a little more.
"""

import argparse
import math
import os
import subprocess
import sys
import time

import numpy as np

from . import mlp, transformer
from .data import CharVocab, build_charset, load_text, pydoc_text
from .train import ONE_THREAD, mean_loss, windows_and_targets

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = {"d": 192, "n_layer": 4, "n_head": 4, "context": 256, "hop": 128, "vocab_size": 96,
          "steps": 2000, "batch": 16, "lr": 2e-3, "lr_final": 1e-4, "warmup": 100, "weight_decay": 0.1,
          "dropout": 0.1, "clip": 1.0, "seed": 0, "eval_every": 500}


def torch_logits(P, x, cfg, dropout=0.0):
    """[B, T, V] logits of x [B, T] (T <= context + 1): transformer.forward in PyTorch, all positions at once."""
    import torch.nn.functional as F

    B, T = x.shape
    d, n_head = cfg["d"], cfg["n_head"]
    drop = (lambda a: F.dropout(a, dropout, training=True)) if dropout else (lambda a: a)
    h = drop(P["wte"][x] + P["wpe"][:T])                                                    # [B, T, d]
    for i in range(cfg["n_layer"]):
        p = {name: P[f"h{i}.{name}"] for name in transformer.LAYER_NAMES}
        a = F.layer_norm(h, (d,), p["ln1.g"], p["ln1.b"], 1e-5) @ p["attn.w_qkv"] + p["attn.b_qkv"]   # [B, T, 3d]
        q, k, v = a.view(B, T, 3, n_head, d // n_head).permute(2, 0, 3, 1, 4)               # 3 x [B, h, T, hd]
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, d)
        h = h + drop(a @ p["attn.w_proj"] + p["attn.b_proj"])
        a = F.layer_norm(h, (d,), p["ln2.g"], p["ln2.b"], 1e-5)
        h = h + drop(F.gelu(a @ p["mlp.w_fc"] + p["mlp.b_fc"], approximate="tanh") @ p["mlp.w_out"] + p["mlp.b_out"])
    return F.layer_norm(h, (d,), P["ln_f.g"], P["ln_f.b"], 1e-5) @ P["head.w"] + P["head.b"]   # [B, T, V]


def batch_windows(ids, starts, context, start_id):
    """For windows at `starts`: inputs [B, context + 1], the start symbol + ids[s:s + context], and
    targets [B, context + 1], ids[s:s + context + 1]."""
    idx = np.asarray(starts)[:, None] + np.arange(context + 1)
    y = ids[idx]
    x = np.concatenate([np.full((len(starts), 1), start_id, ids.dtype), y[:, :-1]], 1)
    return x, y


def heldout_windows(ids, context, hop, start_id):
    """Every window the model scores `ids` with: inputs [W, context + 1] and targets (-1: not this window's row).

    Position t of `ids` is predicted from ids[s:t], s = window_start(t), at slot t - s of window s.
    """
    X, Y = [], []
    for s in sorted({transformer.window_start(t, context, hop) for t in range(len(ids))}):
        x = np.full(context + 1, start_id, np.int64)
        y = np.full(context + 1, -1, np.int64)
        chunk = ids[s:s + context]
        x[1:1 + len(chunk)] = chunk
        for t in range(s, min(s + context + 1, len(ids))):
            if transformer.window_start(t, context, hop) == s:
                y[t - s] = ids[t]
        X.append(x)
        Y.append(y)
    return np.array(X), np.array(Y)


def torch_loss(P, X, Y, cfg, batch=32):
    """Mean cross-entropy (nats) of targets Y (-1 ignored) given windows X, without dropout."""
    import torch
    import torch.nn.functional as F

    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(X), batch):
            x, y = torch.from_numpy(X[i:i + batch]), torch.from_numpy(Y[i:i + batch])
            z = torch_logits(P, x, cfg)
            total += F.cross_entropy(z.reshape(-1, z.shape[-1]), y.reshape(-1), ignore_index=-1,
                                     reduction="sum").item()
            count += int((y >= 0).sum())
    return total / count


def numpy_loss(model, ids):
    """Mean cross-entropy (nats) of the NumPy model on every position of ids, each from its own window."""
    rows = model.probs_for_positions(list(ids), 0)[:-1]                       # [len(ids), V]
    return float(-np.mean(np.log(rows[np.arange(len(ids)), ids])))


def train(train_ids, cfg, X_val=None, Y_val=None, progress=True):
    """Train from transformer.init_params; return ({name: float32 array}, [batch losses])."""
    import torch

    torch.manual_seed(cfg["seed"])
    rng = np.random.default_rng(cfg["seed"])
    init = transformer.init_params(cfg["vocab_size"], cfg["context"], cfg["d"], cfg["n_layer"], cfg["seed"])
    P = {k: torch.tensor(v, requires_grad=True) for k, v in init.items()}
    decay = [p for p in P.values() if p.ndim == 2]
    rest = [p for p in P.values() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                             {"params": rest, "weight_decay": 0.0}], lr=cfg["lr"], betas=(0.9, 0.99))
    ids = np.asarray(train_ids, np.int64)
    losses, t0 = [], time.time()
    for step in range(cfg["steps"]):
        if step < cfg["warmup"]:
            lr = cfg["lr"] * (step + 1) / cfg["warmup"]
        else:
            frac = (step - cfg["warmup"]) / max(1, cfg["steps"] - cfg["warmup"])
            lr = cfg["lr_final"] + 0.5 * (cfg["lr"] - cfg["lr_final"]) * (1 + math.cos(math.pi * frac))
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = batch_windows(ids, rng.integers(0, len(ids) - cfg["context"], cfg["batch"]), cfg["context"],
                             cfg["start"])
        z = torch_logits(P, torch.from_numpy(x), cfg, cfg["dropout"])
        loss = torch.nn.functional.cross_entropy(z.reshape(-1, z.shape[-1]), torch.from_numpy(y).reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(P.values()), cfg["clip"])
        opt.step()
        losses.append(loss.item())
        if progress and (step + 1) % 100 == 0:
            line = f"step {step + 1}/{cfg['steps']}  loss {np.mean(losses[-100:]):.4f}  lr {lr:.1e}  " \
                   f"{(time.time() - t0) / 60:.1f} min"
            if X_val is not None and ((step + 1) % cfg["eval_every"] == 0 or step + 1 == cfg["steps"]):
                line += f"  held-out {torch_loss(P, X_val, Y_val, cfg):.4f}"
            print(line, flush=True)
    return {k: v.detach().numpy().copy() for k, v in P.items()}, losses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", help="a UTF-8 file to train on (default: the stdlib's doc topics)")
    parser.add_argument("--steps", type=int, default=CONFIG["steps"])
    parser.add_argument("--threads", type=int, default=1, help="PyTorch threads (the result depends on it)")
    parser.add_argument("--out", default=HERE, help="folder for target_transformer.npz")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    cfg = dict(CONFIG, steps=args.steps)

    text = load_text(args.text) if args.text else pydoc_text()
    vocab = CharVocab(build_charset(text, cfg["vocab_size"]))
    ids = np.array(vocab.encode(text), np.int64)
    cfg["start"] = vocab.stoi["\n"]              # the start symbol, the id the MLP pads with
    split = int(len(ids) * 0.95)                 # train.py's split
    train_ids, val_ids = ids[:split], ids[split:]
    print(f"corpus: {len(ids)} characters, vocabulary {len(vocab)}, train {len(train_ids)}, held out {len(val_ids)}")
    print(f"model: d {cfg['d']}, {cfg['n_layer']} layers, {cfg['n_head']} heads, context {cfg['context']} "
          f"characters (hop {cfg['hop']}); {cfg['steps']} steps of {cfg['batch']} windows, "
          f"torch {torch.__version__} on {args.threads} thread(s)", flush=True)

    X_val, Y_val = heldout_windows(val_ids, cfg["context"], cfg["hop"], cfg["start"])
    t0 = time.time()
    params, losses = train(train_ids, cfg, X_val, Y_val)
    minutes = (time.time() - t0) / 60

    stored = {k: v.astype(np.float16) for k, v in params.items()}
    path = os.path.join(args.out, "target_transformer.npz")
    np.savez_compressed(path, **stored, n_layer=cfg["n_layer"], n_head=cfg["n_head"], context=cfg["context"],
                        hop=cfg["hop"], start=cfg["start"], charset=np.array([ord(c) for c in vocab.charset], np.int32))
    model = transformer.load(path)
    P32 = {k: torch.from_numpy(v) for k, v in params.items()}
    print(f"transformer: {sum(v.size for v in params.values())} parameters, {minutes:.1f} min of training, final "
          f"batch loss {np.mean(losses[-100:]):.4f}; held-out loss {torch_loss(P32, X_val, Y_val, cfg):.4f} "
          f"(float32 weights, PyTorch), {numpy_loss(model, val_ids):.4f} nats/char (the shipped float16 weights, "
          f"NumPy); {os.path.getsize(path) / 1e6:.2f} MB")

    mlp_path = os.path.join(HERE, "target_mlp.npz")
    with np.load(mlp_path) as f:
        if "".join(chr(c) for c in f["charset"]) == vocab.charset:
            Xv, yv = windows_and_targets(val_ids, int(f["context"]), int(f["pad"]))
            mlp_loss = mean_loss({k: f[k].astype(np.float32) for k in mlp.PARAM_NAMES}, Xv, yv)
            print(f"MLP (shipped target_mlp.npz), the same held-out characters: {mlp_loss:.4f} nats/char")
    print(f"wrote {path}")


if __name__ == "__main__":
    if any(os.environ.get(name) != value for name, value in ONE_THREAD.items()):
        sys.exit(subprocess.call([sys.executable, "-m", "specdec.models.train_transformer", *sys.argv[1:]],
                                 env={**os.environ, **ONE_THREAD}))
    main()
