"""Hostile: loops forever at import (cannot be graded: exit 2)."""

while True:
    pass


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    return None
