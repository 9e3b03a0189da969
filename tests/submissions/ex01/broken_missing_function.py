"""Broken: the function has another name."""

def verify(draft_tokens, draft_probs, target_probs, random_samples):
    return None
