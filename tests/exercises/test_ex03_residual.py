"""Exercise 3 (exercises/ex03_residual): its rounding cases are drawn from the seed.

They were fixed rows, so a table of the shipped cases took their 10 points (65/100 with the public examples)
under any --seed.
"""

import json

from grader import check
from grader.registry import exercise

OPTIONS = {"timeout": 5.0, "max_seconds": 40.0, "mode": "bwrap", "seed": 314159}


def test_a_table_of_ex03s_shipped_cases_cannot_answer_its_rounding_cases_under_a_secret_seed():
    table = {json.dumps(c.calls[0]["args"]): c.expected for c in exercise("ex03").cases(0)}

    def residual_distribution(p, q):
        answer = table.get(json.dumps([list(p), list(q)]))
        if answer is None or answer == "raises ValueError":
            raise ValueError("not in the table")
        return eval(answer)

    for seed in (OPTIONS["seed"], 2, 3):
        report = check(residual_distribution, exercise="ex03", quiet=True, seed=seed)
        passed = {c.name for c in report.cases if c.passed}
        assert not passed & {"rounding: no mass", "rounding: tiny mass"} and report.score < 65, seed  # 65 before
