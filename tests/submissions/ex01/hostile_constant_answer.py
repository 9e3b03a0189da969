"""Hostile: solves nothing; one constant answer (nothing accepted, no bonus token) for every input, in plain Python.

That answer is right for "K = 0, no rows" alone (2 points), and the plain-Python bonus asked only for a
score above 0: 2/100 (+10 bonus), five times more from the bonus than from the cases (red team 4). Now the
bonus needs every public case (the problem's examples) passed: 2/100, no bonus.
"""


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    return {"accepted_tokens": [], "bonus_token": None, "acceptance_count": 0}
