"""Hostile: finds NumPy's files anywhere on the filesystem, copies them under another name, imports the copy.

A text search or an import hook for "numpy" misses it; the old grader gave the bonus. The sandbox
without NumPy has no copy to find: every call reports "no NumPy found".
"""
import importlib
import os
import shutil
import sys

copies = []
for folder, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(folder, d) not in ("/proc", "/sys", "/dev")]
    if os.path.basename(folder) == "numpy" and "__init__.py" in files:
        copies.append(folder)
        dirs[:] = []
np = None
if copies:
    target = "/tmp/renamed_site"
    shutil.copytree(os.path.dirname(copies[0]), target, dirs_exist_ok=True,
                    ignore=lambda d, names: [n for n in names if n not in ("numpy", "numpy.libs") and d == os.path.dirname(copies[0])])
    os.rename(os.path.join(target, "numpy"), os.path.join(target, "npcopy"))
    sys.path.insert(0, target)
    try:
        np = importlib.import_module("npcopy")
    except Exception:
        np = None


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    if np is None:
        raise RuntimeError(f"no NumPy found ({len(copies)} copies)")
    k = len(draft_tokens)
    if len(draft_probs) != k or len(random_samples) != k or len(target_probs) < k:
        raise ValueError("lengths")
    accepted = []
    for i, x in enumerate(draft_tokens):
        p, q = np.asarray(target_probs[i]), np.asarray(draft_probs[i])
        if random_samples[i] <= min(1.0, p[x] / q[x]):
            accepted.append(x)
        else:
            r = np.maximum(p - q, 0.0)
            return {"accepted_tokens": accepted, "bonus_token": int(np.argmax(r if r.sum() > 0 else p)),
                    "acceptance_count": len(accepted)}
    bonus = int(np.argmax(target_probs[k])) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
