"""Exercise 1 (exercises/ex01_verify): the graded problem's template, and hidden cases a table cannot answer.

The stub and the statement keep the problem's template verbatim. A lookup table of the shipped cases (inputs
hashed to their expected answers) scores 100 at the shipped seed and, under a secret seed, earns no hidden
point but those whose input cannot change.
"""

import hashlib
import json
import os

import pytest

from grader import grade_file
from grader.registry import exercise
from helpers import ROOT

SECRET = 86753091
CASES = exercise("ex01").cases(SECRET)


def test_ex01_stub_and_statement_keep_the_template_verbatim():
    template = '''def verify_speculative_tokens(draft_tokens: list[int], draft_probs: list[list[float]],
                              target_probs: list[list[float]], random_samples: list[float]) -> dict:
    """Verify draft tokens via speculative decoding rejection sampling.
    Args:
        draft_tokens: Sequence of K tokens proposed by draft model.
        draft_probs: Draft model probabilities for each proposed step.
        target_probs: Target model probabilities for each step (length >= K).
        random_samples: Uniform random samples in [0, 1) for acceptance test.
    Returns:
        dict with 'accepted_tokens', 'bonus_token', and 'acceptance_count'.
    """
'''
    for file in ("ex01_verify.py", "README.md"):
        assert template in open(os.path.join(ROOT, "exercises", "ex01_verify", file)).read()


@pytest.mark.slow
def test_a_lookup_table_of_the_shipped_cases_earns_no_hidden_point_under_a_secret_seed(tmp_path):
    shipped = exercise("ex01").cases(0)
    key = lambda args: hashlib.sha256(json.dumps(args).encode()).hexdigest()
    # a repaired twin: any answer; a bad row's ValueError names the row the case's judge wants named
    names = lambda c: " ".join(c.judge.spec.get("names") or []) if c.expected == "raises ValueError" else ""
    table = {key(c.calls[0]["args"]): (c.expected or "None") + (" " + names(c) if names(c) else "") for c in shipped}
    path = tmp_path / "ex01_table.py"
    path.write_text("import hashlib, json\nTABLE = " + repr(table) + "\n"
                    "def verify_speculative_tokens(*args):\n"
                    "    answer = TABLE[hashlib.sha256(json.dumps(list(args)).encode()).hexdigest()]\n"
                    "    if answer.startswith('raises ValueError'):\n"
                    "        raise ValueError('from the table: ' + answer)\n"
                    "    return eval(answer)\n")
    assert grade_file(str(path), timeout=5.0, seed=0).score == 100
    secret = grade_file(str(path), timeout=5.0, seed=SECRET)
    own = exercise("ex01").cases(SECRET)   # the class's hidden cases under the secret
    same_inputs = {c.name for c, s in zip(shipped, own) if c.calls == s.calls and not c.is_twin and c.hidden}
    assert same_inputs == {"K = 0, no rows"}  # the only fixed hidden input
    # The examples' renamed twins are drawn from the secret too: the table's three examples earn nothing.
    assert {c.name for c in secret.cases if c.passed} == same_inputs and secret.score == 2
