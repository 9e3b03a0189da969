"""Hostile (Gradescope): puts whatever it can read of /autograder/source (the kit, the seed) into its errors.

Every call raises an error whose message is what it found: the config with the secret seed, the names of
the kit's files. The student sees their error messages, so nothing may be found: the source folder is
closed to the submission's user (or absent from its sandbox).
"""
import os

FOUND = []
for path in ("/autograder/source/config.json", "/autograder/source", "/autograder/source/grader",
             "/autograder/submission_metadata.json"):
    try:
        FOUND.append(open(path).read()[:300] if os.path.isfile(path) else ",".join(sorted(os.listdir(path))[:20]))
    except OSError as exc:
        FOUND.append(type(exc).__name__)


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    raise RuntimeError("found: " + " | ".join(FOUND))
