"""Hostile: every call loops forever (3 time-outs, then the rest is not run)."""

def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    while True:
        pass
