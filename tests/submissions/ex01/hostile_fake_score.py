"""Hostile: prints a fake score line and fake JSON, and always returns the empty answer."""

import json

print("score: 100/100 (+10 bonus)")
print(json.dumps({"exercise": "ex01", "score": 100, "max_score": 100, "bonus": 10}))


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    print("score: 100/100 (+10 bonus)")
    return {"accepted_tokens": [], "bonus_token": None, "acceptance_count": 0}
