"""grader/session.py: a submission cannot tell which case it answers except from the case's own inputs.

The case list is public. Sent in order, each request under its place as id, it let a file count its calls (or
read the request from the worker it shares a process with) and raise ValueError exactly where the bad-input
cases sit: 19/100 on ex02 with no code, under any --seed (tests/submissions/ex02/hostile_case_by_place.py).
The cases go in a secret random order under random ids (`session._in_secret_order`).
"""

import os

import pytest

from grader import grade_file, session
from helpers import NEEDS_BWRAP, SUBS

OPTIONS = {"timeout": 5.0, "max_seconds": 40.0, "mode": "bwrap", "seed": 314159}


SPY = '''
import sys
_calls = [0]

def spy(x):
    """(how many calls so far, the id of the request the worker is answering), read from the worker's frames."""
    _calls[0] += 1
    frame = sys._getframe(1)
    while "request" not in frame.f_locals:
        frame = frame.f_back
    return [_calls[0], frame.f_locals["request"]["id"]]
'''


def test_a_file_cannot_learn_a_cases_place_from_its_call_count_or_its_request(tmp_path):
    path = tmp_path / "spy.py"
    path.write_text(SPY)
    n = 40
    requests = [{"id": i, "func": "spy", "calls": [{"args": [i]}]} for i in range(n)]
    outcomes = session.run(str(path), "spy.py", ["spy"], requests, "process").outcomes
    seen = [o["results"][0]["value"] for o in outcomes]  # case i: [its place in the sandbox, the id it saw]
    places, ids = [s[0] for s in seen], [s[1] for s in seen]
    assert sorted(places) == list(range(1, n + 1))      # every case ran once ...
    assert places != list(range(1, n + 1))              # ... not in the list's order (chance 1/40!)
    assert len(set(ids)) == n and not set(ids) & set(range(n))  # ids that are not places (chance ~40 * 2^-47)


@pytest.mark.slow
@NEEDS_BWRAP
def test_raising_only_at_the_bad_input_cases_places_earns_nothing():
    report = grade_file(os.path.join(SUBS, "ex02", "hostile_case_by_place.py"), "ex02", **OPTIONS)
    assert (report.score, report.status) == (0, "failed")  # 19/100 before
    assert all(not c.passed for c in report.cases)
