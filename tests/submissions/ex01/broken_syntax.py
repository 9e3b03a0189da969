"""Broken: a syntax error (a def without its colon)."""

def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples)
    return None
