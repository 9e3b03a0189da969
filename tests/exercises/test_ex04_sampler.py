"""Exercise 4 (exercises/ex04_sampler/grading.py): the token rule's statistics judge every step and every output.

Holes its statistics had, each closed and held here: a sampler right at step 0 and wrong later scored 100
when only step 0 and aggregate counts were judged (now the joint law of the later steps, with its own
diagnosis); a statistical case's seeds that gave away a call's place in its batch (quotas keyed on it);
a sampler that never verifies and emits a sample of p's first row got the first token's law exactly right
(55/100: now every output must have probability > 0 for its own call). Also: another correct sampler passes,
the argmax mistake is measured far off, inputs are shown as a learner writes them, nan tokens are refused.
"""

import os
import re

import pytest

import specdec
from grader import check, grade_file
from grader.diagnose import signatures
from grader.registry import exercise
from helpers import NEEDS_BWRAP, SUBS, load
from specdec.sampling import speculative_sample

OPTIONS = {"timeout": 5.0, "max_seconds": 40.0, "mode": "bwrap", "seed": 314159}


# ---- the later steps -------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_sampler_wrong_after_step_0_loses_the_later_steps_case_alone():
    """A sampler right at step 0 and wrong later scored 100 when ex04 judged only step 0 and aggregate counts."""
    ex = exercise("ex04")
    cases = {c.name: c for c in ex.cases(0)}
    sigs = signatures(ex, 0, ex.cases(0))  # each trusted mistake, run on every case
    lost = sorted(sigs["late_correction_from_p"])
    # The joint law catches it; so does the mean case, where its later corrections from p are impossible
    # outputs (see "outputs impossible for their inputs" below). Step 0 alone decides every other case.
    assert lost == ["mean accepted drafts", "steps after the first: joint law"]
    assert list(sigs.values()).count(sigs["late_correction_from_p"]) == 1
    for call in cases[lost[1]].calls:  # K = 3, step 0 certain: only the later steps decide the law
        tokens, q, p, _ = call["args"]
        assert len(tokens) == 3 and q[0][tokens[0]] == p[0][tokens[0]] == 1.0
    # The learner's file (graded in the sandbox, with its diagnosis, by test_catalogue.py) loses that case alone.
    module = {}
    exec(open(os.path.join(SUBS, "ex04", "wrong_late_correction_from_p.py")).read(), module)
    report = check(module["speculative_sample"], exercise="ex04", quiet=True)
    assert [c.name for c in report.cases if not c.passed] == lost
    assert report.score == 100 - sum(cases[name].points for name in lost)
    cause = next(m.cause for m in ex.mistakes if m.name == "late_correction_from_p")
    assert report.diagnosis == f"Most likely cause: {cause}."


@pytest.mark.slow
def test_ex04s_signatures_stay_distinct_for_a_secret_seed():  # ex06's: test_ex06_block.py
    ex = exercise("ex04")
    sigs = signatures(ex, 31337, ex.cases(31337))
    assert all(sigs.values()) and len(set(sigs.values())) == len(sigs)
    # the joint law catches it; so does any case where a later rejection's token from p is impossible
    assert "steps after the first: joint law" in sigs["late_correction_from_p"] <= {"steps after the first: joint law",
                                                                                   "mean accepted drafts"}


# ---- the statistical cases' calls ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_statistical_cases_seeds_do_not_give_away_a_calls_place_in_the_batch():
    for case in (c for c in exercise("ex04").cases(0) if c.replay and c.name != "same seed, same result"):  # pairs
        seeds = [call["args"][3]["$rng"] for call in case.calls]
        # Consecutive seeds would: seed mod N would be each call's place, and quotas keyed on it replay perfectly.
        assert len(set(seeds)) == len(seeds) and len({s % len(seeds) for s in seeds}) < 0.7 * len(seeds)


@pytest.mark.slow
def test_ex04_statistics_pass_another_correct_sampler_and_measure_the_argmax_one():
    choices = load(os.path.join(SUBS, "ex04", "good_choices.py")).speculative_sample  # another order of draws
    assert check(choices, exercise="ex04", quiet=True).score == 100
    argmax = load(os.path.join(SUBS, "ex04", "wrong_argmax_not_sampled.py")).speculative_sample
    report = check(argmax, exercise="ex04", quiet=True)
    failed = {c.name: c.message for c in report.cases if not c.passed}
    # "steps after the first" holds the argmax to its law where the rows make it wrong (it may be exact there)
    assert {"bonus ~ p_K", "first token ~ p"} <= set(failed) <= {"bonus ~ p_K", "first token ~ p",
                                                                 "steps after the first: joint law"}
    # The case's rows were drawn so that the argmax correction is >= 9 standard errors off (ex04._first_token).
    z = float(re.search(r"\|z\| = ([0-9.]+)", failed["first token ~ p"]).group(1))
    assert z > 4.5


@pytest.mark.slow
def test_ex04_shows_inputs_as_a_learner_writes_them_and_rejects_nan_tokens():
    public = [c for c in exercise("ex04").cases(0) if not c.hidden]
    assert all(c.shown_input().endswith("rng=random.Random(0)") for c in public)

    def nan_sampler(draft_tokens, draft_probs, target_probs, rng):
        out = specdec.speculative_sample(draft_tokens, draft_probs, target_probs, rng)
        return dict(out, bonus_token=float("nan")) if out["bonus_token"] is not None else out
    report = check(nan_sampler, exercise="ex04", quiet=True)
    stats = {c.name: c.message for c in report.cases if c.name in ("first token ~ p", "bonus ~ p_K")}
    # a hidden case says what is wrong, not the value (a value the file returns could carry the inputs out)
    assert all("bonus_token is a float: token ids must be ints" in m for m in stats.values()), stats


# ---- outputs impossible for their inputs -----------------------------------------------------------------------------
def _never_verifies(draft_tokens, draft_probs, target_probs, rng):
    """The hostile file's function: emit a sample of target_probs[0], keep nothing."""
    row, cut, total = target_probs[0], rng.random(), 0.0
    for j, w in enumerate(row):
        total += w
        if w > 0 and cut < total:
            return {"accepted_tokens": [], "bonus_token": j, "acceptance_count": 0}
    return {"accepted_tokens": [], "bonus_token": max(j for j, w in enumerate(row) if w > 0), "acceptance_count": 0}


@pytest.mark.slow
def test_a_sampler_that_never_verifies_fails_the_statistical_cases_on_impossible_outputs():
    report = check(_never_verifies, exercise="ex04", quiet=True)
    by_name = {c.name: c for c in report.cases}
    first = by_name["first token ~ p"]  # its law is exactly p: passed on counts alone
    assert not first.passed and "has probability 0 for this call's inputs" in first.message
    assert all(not c.passed for c in report.cases if c.name in ("mean accepted drafts", "bonus ~ p_K"))
    assert check(speculative_sample, exercise="ex04", quiet=True).score == 100  # the reference loses nothing


@NEEDS_BWRAP
@pytest.mark.slow
def test_the_never_verifying_file_keeps_only_what_its_outputs_get_right():
    report = grade_file(os.path.join(SUBS, "ex04", "hostile_never_verifies.py"), "ex04", **OPTIONS)
    passed = {c.name for c in report.cases if c.passed}
    assert not passed & {"first token ~ p", "shape on a random draft", "mean accepted drafts", "bonus ~ p_K",
                         "steps after the first: joint law"}   # first token ~ p and the shape: 14 points before
    assert report.score == 41 and report.status == "failed"
