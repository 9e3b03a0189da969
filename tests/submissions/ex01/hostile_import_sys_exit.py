"""Hostile: sys.exit(0) at import (cannot be graded: exit 2)."""

import sys

sys.exit(0)


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    return None
