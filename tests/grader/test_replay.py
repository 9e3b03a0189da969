"""grader/replay.py: a statistical case's calls, replayed in a fresh sandbox, must give the same outputs.

What the replay defeats: a file that never samples but sees each batch whole and hands out exact quotas
(tests/submissions/ex04/hostile_deterministic.py, 100/100 without the replay); a memo that answers the second
call of a "same seed, same result" pair with the first call's answer (hostile_memo_same_seed.py); any output
that depends on what ran before in the same process. A function of its input alone replays; a function that
stalls unless called in order times out. The keyring, a channel from the first sandbox to the replay's:
tests/grader/test_sandbox.py.
"""

import os

import pytest

from grader import grade_file, replay, session
from grader.registry import exercise
from helpers import NEEDS_BWRAP, SUBS

OPTIONS = {"timeout": 5.0, "max_seconds": 40.0, "mode": "bwrap", "seed": 314159}


@pytest.mark.slow
@pytest.mark.parametrize("body, replayed", [
    ("return 2 * x", ""),                                    # a function of its input: the replay agrees
    ("return len(SEEN)", replay.MESSAGE),                    # a function of what ran before: it does not
    ("while x > 0 and x - 1 not in SEEN:\n        time.sleep(0.01)\n    return 2 * x",  # stalls unless called in order
     "its calls could not be replayed in a fresh sandbox: stopped after waiting 0.5 s without running"),
])
def test_replayed_calls_must_give_the_same_outputs_in_a_fresh_process(tmp_path, body, replayed, monkeypatch):
    path = tmp_path / "f.py"
    path.write_text(f"import time\nSEEN = []\n\n\ndef f(x):\n    SEEN.append(x)\n    {body}\n")
    # Cases run in a secret order (test_session.py), a batch's calls in order: the replay's picks, shuffled, do not.
    requests = [{"id": 0, "func": "f", "calls": [{"args": [-1]}]}, {"id": 1, "func": "f", "calls": [
        {"args": [i]} for i in range(40)]}]
    monkeypatch.setattr(session, "BLOCKED", 0.5)   # the waiting a case may do (it sleeps, using no CPU)
    run = session.run(str(path), "f.py", ["f"], requests, "process", timeout=0.5, replays=[False, True])
    assert len(run.outcomes[1]["results"]) == 40 and run.outcomes[1]["replay"].startswith(replayed)
    assert "replay" not in run.outcomes[0] and len(run.outcomes[0]["results"]) == 1  # not statistical: not replayed


@NEEDS_BWRAP
@pytest.mark.slow
def test_a_file_that_hands_out_quotas_instead_of_sampling_fails_every_statistical_case():
    """A file that patches the worker, sees each batch whole and never samples (100/100 without the replay)."""
    report = grade_file(os.path.join(SUBS, "ex04", "hostile_deterministic.py"), "ex04", timeout=5.0, mode="bwrap")
    # Its exact cases are right, and so is "same seed, same result": it answers a pair by a function of the inputs
    # alone (the median), which replays. That case once failed only because the replay pooled its pair into a
    # batch of other cases' calls, where the file handed out quotas; a replayed request now has its first run's
    # shape (issue 19). Every batch of 2000 calls fails its replay.
    statistical = {c.name: c.points for c in exercise("ex04").cases(0) if c.replay and len(c.calls) >= 100}
    lost = {c.name: c.message for c in report.cases if not c.passed}
    assert set(lost) == set(statistical) and report.score == 100 - sum(statistical.values())
    assert all(m.startswith((replay.MESSAGE, "the law of")) for m in lost.values())  # or its quotas' count


@NEEDS_BWRAP
@pytest.mark.slow
def test_a_memo_keyed_on_the_rngs_state_fails_the_same_seed_case():
    memo = grade_file(os.path.join(SUBS, "ex04", "hostile_memo_same_seed.py"), "ex04", **OPTIONS)
    plain = grade_file(os.path.join(SUBS, "ex04", "wrong_module_random.py"), "ex04", **OPTIONS)
    same = {c.name: c for c in memo.cases}["same seed, same result"]
    assert not same.passed and same.message.startswith(replay.MESSAGE)  # passed (6 points) before
    assert memo.score == plain.score < 100
