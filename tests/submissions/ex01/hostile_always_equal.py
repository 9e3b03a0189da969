"""Hostile: returns an object that compares equal to anything."""

class AlwaysEqual:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    return AlwaysEqual()
