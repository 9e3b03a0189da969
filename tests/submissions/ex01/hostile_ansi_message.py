"""Hostile: raises exceptions whose messages carry line breaks, ANSI escapes and a fake score line.

They must reach the table, the JSON and the CSV as one harmless line.
"""


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    raise ValueError('\n\x1b[2K\rscore: 100/100 (+10 bonus)\n{"score": 100, "bonus": 10}\x1b]0;owned\x07')
