"""Hostile: makes a user and mount namespace of its own, mounts a tmpfs over /tmp, writes 32 MiB there.

The sandbox's /tmp holds 16 MiB; memory in a tmpfs counts against no process's limit, so a tmpfs
of its own would let a submission fill the grading machine's memory. In the old sandbox the worker
made a user namespace (holding every capability in it) before the submission loaded, so the mount
worked. Now no namespace can be made: the attack fails and the file, correct otherwise, gets 100.
"""
import ctypes
import os

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
libc = ctypes.CDLL(None, use_errno=True)


def _tmpfs_of_our_own():
    """MiB written past /tmp's limit (0 if refused)."""
    if libc.unshare(CLONE_NEWNS) != 0 and libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        return 0
    if libc.mount(b"none", b"/tmp", b"tmpfs", 0, b"size=64m") != 0:
        return 0
    written = 0
    try:
        for i in range(8):
            with open(f"/tmp/fill{i}", "wb") as f:
                f.write(b"x" * 4 * 1024 ** 2)
            written += 4
    except OSError:
        pass
    return written


WRITTEN = _tmpfs_of_our_own()


def _argmax(row):
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best]:  # strict: a later equal value never wins
            best = j
    return best


def _residual(p, q):
    excess = [max(0.0, a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    return [e / mass for e in excess] if mass > 0 else list(p)


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    if WRITTEN > 16:
        raise RuntimeError(f"wrote {WRITTEN} MiB to a tmpfs of its own: no memory limit")
    k = len(draft_tokens)
    if len(draft_probs) != k or len(random_samples) != k or len(target_probs) < k:
        raise ValueError("lengths do not match")
    for name, rows in (("target_probs", target_probs), ("draft_probs", draft_probs)):
        for i, row in enumerate(rows):
            if not all(0.0 <= v < float("inf") for v in row) or abs(sum(row) - 1.0) > 1e-4:
                raise ValueError(f"{name}[{i}] is not a probability distribution")
    for i, (x, row) in enumerate(zip(draft_tokens, draft_probs)):
        if not 0 <= x < len(row):
            raise ValueError(f"draft_tokens[{i}] is {x}: outside the vocabulary")
        if row[x] == 0:
            raise ValueError(f"draft_probs[{i}][{x}] is 0: the draft cannot have proposed it")
    accepted = []
    for i, x in enumerate(draft_tokens):
        p, q, u = target_probs[i], draft_probs[i], random_samples[i]
        if u <= min(1.0, p[x] / q[x]):
            accepted.append(x)
        else:
            bonus = _argmax(_residual(p, q))
            return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
    bonus = _argmax(target_probs[k]) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
