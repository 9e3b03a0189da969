"""Hostile: returns an int of 401 digits where a probability belongs (it crashed the old grader's comparison)."""


def softmax(logits, temperature=1.0):
    return [10 ** 400] + [0.0] * (len(logits) - 1)
