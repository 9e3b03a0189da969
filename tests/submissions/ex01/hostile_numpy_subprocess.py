"""Hostile: does the work with NumPy in a subprocess, so that its own process never imports NumPy.

The old grader watched only the child it started and gave the plain-Python bonus. In the sandbox
without NumPy the subprocess fails, and this file earns nothing.
"""
import json
import subprocess
import sys

CODE = """
import json, sys
import numpy as np
t, q, p, u = json.loads(sys.stdin.read())
acc = []
for i, x in enumerate(t):
    if u[i] <= min(1.0, p[i][x] / q[i][x]):
        acc.append(x)
        continue
    r = np.maximum(np.array(p[i]) - np.array(q[i]), 0.0)
    print(json.dumps([acc, int(np.argmax(r if r.sum() > 0 else p[i]))])); sys.exit()
print(json.dumps([acc, int(np.argmax(p[len(t)])) if len(p) > len(t) else None]))
"""


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    if not (len(draft_probs) == len(random_samples) == len(draft_tokens) <= len(target_probs)):
        raise ValueError("lengths")
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          input=json.dumps([draft_tokens, draft_probs, target_probs, random_samples]))
    accepted, bonus = json.loads(done.stdout)  # no NumPy in the subprocess: empty output, JSONDecodeError
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}
