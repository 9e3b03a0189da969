"""Hostile: a dict whose values (and itself) compare equal to anything."""

class AlwaysEqual(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


class AlwaysEqualList(list):
    def __eq__(self, other):
        return True


class AlwaysEqualDict(dict):
    def __eq__(self, other):
        return True


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    return AlwaysEqualDict(accepted_tokens=AlwaysEqualList([AlwaysEqual(7)]), bonus_token=object(),
                           acceptance_count=AlwaysEqual(1))
