"""Hostile: looks for the grader's secrets (the --seed, its environment, its command line) and leaks them.

Every call raises an error whose message is what it found. The sandbox starts with an empty
environment and shows no process of the grader, so nothing secret can come out.
"""
import os

found = [f"{k}={v}" for k, v in os.environ.items()]
for pid in os.listdir("/proc"):
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                found.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            pass


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    raise RuntimeError("leak: " + " | ".join(found))
