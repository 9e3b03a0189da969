"""grader/cases.py's case_seed: under a secret, each file's hidden cases are its own.

Reference: the cases themselves, compared input by input: two files (two classmates) graded under one secret
answer different hidden inputs wherever an input can vary, the same file always the same ones, and the shipped
cases (no secret) are everyone's.
"""

from grader.cases import case_seed
from grader.registry import exercise

SECRET = 4422119900


def test_two_files_get_hidden_cases_of_their_own_under_a_secret():
    ex = exercise("ex01")
    alice, bob = (ex.cases(case_seed(SECRET, code)) for code in ("def f(): return 1\n", "def f(): return 2\n"))
    varying = [a.name for a, b in zip(alice, bob) if a.hidden and a.calls != b.calls]
    fixed = {a.name for a, b in zip(alice, bob) if a.hidden and a.calls == b.calls}
    assert len(varying) >= 20 and fixed <= {"K = 0, no rows", "K = 0, no rows (its valid twin)"}, fixed
    assert [c.calls for c in alice] == [c.calls for c in ex.cases(case_seed(SECRET, "def f(): return 1\n"))]
    assert case_seed(0, "anything") == 0 and case_seed(SECRET, "a") != case_seed(SECRET + 1, "a")
