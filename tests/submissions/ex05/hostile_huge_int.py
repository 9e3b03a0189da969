"""Hostile: returns ints of 401 digits from both functions (the old grader crashed with OverflowError)."""


def acceptance_rate(p, q):
    return 10 ** 400


def expected_tokens_per_step(alpha, gamma):
    return -(10 ** 400)
