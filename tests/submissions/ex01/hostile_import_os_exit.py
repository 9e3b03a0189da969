"""Hostile: os._exit(0) at import (cannot be graded: exit 2)."""

import os

os._exit(0)


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    return None
