"""Exercise 5 (exercises/ex05_speedup): beta's bad-input cases cannot be told apart by their look.

Both were the only unequal rows of k/32 over more than two tokens: raising there took 8/100 with no check.
Now each is the 20-token case's twin but for its fault.
"""

from grader import check
from grader.registry import exercise

OPTIONS = {"timeout": 5.0, "max_seconds": 40.0, "mode": "bwrap", "seed": 314159}


def acceptance_rate(p, q):
    """ex05's fingerprint: raise on unequal rows of k/32 (where both of beta's bad-input cases were)."""
    if p != q and all(v * 32 == int(v * 32) for v in list(p) + list(q)) and len(p) > 2:
        raise ValueError("bad input (or so its look says)")
    return None


def expected_tokens_per_step(alpha, gamma):
    return None


def test_betas_bad_input_cases_are_the_20_token_cases_twins():
    cases = {c.name: c for c in exercise("ex05").cases(OPTIONS["seed"])}
    for name in ("beta: length mismatch raises", "beta: not a distribution raises"):
        p, q = cases[name].calls[0]["args"]
        assert len(p) == 20 and len(q) in (19, 20, 21) and any(v * 32 != int(v * 32) for v in p + q)
    assert check(acceptance_rate, expected_tokens_per_step, exercise="ex05", quiet=True,
                 seed=OPTIONS["seed"]).score == 0  # 8/100 before
