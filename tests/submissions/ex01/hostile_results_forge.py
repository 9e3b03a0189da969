"""Hostile (Gradescope): writes /autograder/results/results.json itself, with full marks, then solves nothing.

Naive autograders let the submission's own process write the results file Gradescope reads. Here it must
neither reach /autograder/results (closed to its user, or absent in its sandbox) nor survive the grader's
own write at the end: its grade is what its function earns (nothing).
"""
import json
import os

for folder in ("/autograder/results", "/autograder"):
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "results.json"), "w") as f:
            json.dump({"score": 1000, "output": "forged", "tests": []}, f)
    except OSError:
        pass


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    return {"accepted_tokens": [], "bonus_token": None, "acceptance_count": 0}
