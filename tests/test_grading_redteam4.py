"""The grader against the fourth red team: attacks that worked on the grader after three rounds, and their classes.

- the case's place (tests/submissions/ex02/hostile_case_by_place.py): the case list is public and was sent
  in order, each request under its place as id, so a file could tell which case it answered without
  reading its inputs (count its calls, or read the request from the worker it shares a process with) and
  raise ValueError exactly where the bad-input cases sit: 19/100 on ex02 with no code and any --seed.
  Now the cases go in a secret random order under random ids (`session._in_secret_order`).
- bad-input cases told apart by their size (tests/submissions/ex04/hostile_bad_input_by_size.py): every one of
  ex04's and ex06's was K = 2 over two tokens, which no valid case was: raising there took 11/100 on ex04 with
  no check (ex05's beta ones, the only unequal rows of k/32: 8/100). Now each is a valid case's twin but for its
  fault (`samplers.invalid`, ex05's 20-token case); ex01's vary in size as its valid cases do.
- magic options in an HONEST notebook (tests/submissions/ex02/good_timeit_options.ipynb): the grader's IPython
  stand-in ran `%timeit -n 10 -r 2 stmt` as the code `n 10 -r 2 stmt` (a SyntaxError: the file could not be
  graded, 0/100) and skipped `%%timeit`'s setup line. Now options are read as IPython reads them.
- the plain-Python bonus for a non-solution (tests/submissions/ex01/hostile_constant_answer.py): +10 for any
  score above 0, so a constant answer took 2/100 (+10 bonus). Now the bonus (all or nothing, as the problem
  states it) needs every public case passed.
- hidden inputs that no seed changes: ex03's two rounding cases were fixed rows, so a table of the shipped
  cases took their 10 points (65/100 with the public examples) under any --seed. Now drawn from the seed;
  only inputs with one possible value stay fixed (`FIXED_BY_NATURE`).
- a memo that makes a same-seed pair agree (tests/submissions/ex04/hostile_memo_same_seed.py): a sampler on the
  module-level random that returns the first call's answer to the second call of a pair (same inputs, same rng
  state) passed "same seed, same result" (6 points). Now that case is replayed too, with other module seeds.
- outputs impossible for their inputs (tests/submissions/ex04/hostile_never_verifies.py): a sampler that
  never verifies and emits a sample of p's first row gets the first token's law exactly right, and the
  statistical and shape cases judged counts and form only: 55/100 on ex04. Now every output of those
  cases must have probability > 0 for its own call (`stats.outputs` with the exercise's exact `possible`).
- (found after the round) a notebook of millions of tiny JSON values: 32 MiB of `[],` took 830 MB and 5.8 s to
  parse in its grading process. Now its values are counted on its text first (at most notebook.MAX_VALUES).
"""

import itertools
import json
import os
import random
from fractions import Fraction

import pytest

from specdec.exact import step_outcomes
from exercises.ex04_sampler import grading as ex04
from exercises.ex06_block import grading as ex06
from grader import check, grade_file, replay, session
from exercises.common.rows import dyadic_row
from grader.notebook import MAX_VALUES, NotebookError, code_cells, notebook_to_script
from grader.registry import exercise
from grader.report import CaseResult, Report
from grader.sandbox import bwrap_problem
from specdec.sampling import speculative_sample

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions")
NEEDS_BWRAP = pytest.mark.skipif(bool(bwrap_problem()), reason=f"no sandbox here: {bwrap_problem()}")
OPTIONS = {"timeout": 5.0, "max_seconds": 40.0, "mode": "bwrap", "seed": 314159}


# ---- the case's place ------------------------------------------------------------------------------------------
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


@NEEDS_BWRAP
def test_raising_only_at_the_bad_input_cases_places_earns_nothing():
    report = grade_file(os.path.join(SUBS, "ex02", "hostile_case_by_place.py"), "ex02", **OPTIONS)
    assert (report.score, report.status) == (0, "failed")  # 19/100 before
    assert all(not c.passed for c in report.cases)


# ---- notebooks: IPython's magic options --------------------------------------------------------------------------
@pytest.mark.parametrize("magic, expected", [
    ("%timeit -n 10 -r 2 f([1.0, -2.0])", "f([1.0, -2.0])"),   # options with a value, as separate words
    ("%timeit -n10 -qo f(x)", "f(x)"),                         # a value in the word; flags run together
    ("%prun -s cumulative -l 5 -q f()", "f()"),
    ("%time f(-1)", "f(-1)"),                                   # no options: a minus sign stays code
])
def test_a_magics_options_are_not_run_as_code(magic, expected):
    """`%timeit -n 10 stmt` ran as `n 10 stmt`: a SyntaxError, so an honest notebook could not be graded (0)."""
    script, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": magic}]}))
    ran = []
    namespace = {"f": lambda *args: ran.append(args), "x": 0}
    exec(script, namespace)
    assert ran == [eval(expected, {"f": lambda *args: args, "x": 0})]


@NEEDS_BWRAP
def test_an_honest_notebook_timing_with_options_gets_full_marks():
    report = grade_file(os.path.join(SUBS, "ex02", "good_timeit_options.ipynb"), "ex02", **OPTIONS)
    assert (report.error, report.score, report.status) == ("", 100, "passed")  # cannot grade (0) before


# ---- the plain-Python bonus -------------------------------------------------------------------------------------
def test_the_bonus_is_all_or_nothing_and_needs_every_public_case():
    def report(public, hidden, plain=True):  # two public cases (25 points each) and two hidden ones
        cases = [CaseResult(f"p{i}", False, 25, ok) for i, ok in enumerate(public)]
        cases += [CaseResult(f"h{i}", True, 25, ok) for i, ok in enumerate(hidden)]
        return Report("ex01", "t", cases, 100, bonus_points=10, plain_python=plain)
    assert report((True, True), (True, True)).bonus == 10  # 100: a solution
    assert report((True, True), (False, False)).bonus == 10  # 50, every public case: still a solution, +10
    assert report((True, False), (True, True)).bonus == 0  # 75, a public example failed: not a solution
    assert report((False, False), (True, False)).bonus == 0  # a hidden case or two by luck: nothing
    assert report((True, True), (True, True), plain=False).bonus == 0  # NumPy: no bonus
    assert report((True, True), (True, True), plain=None).bonus == 0  # undecided (no sandbox): no bonus


@NEEDS_BWRAP
def test_a_constant_answer_earns_no_bonus():
    report = grade_file(os.path.join(SUBS, "ex01", "hostile_constant_answer.py"), "ex01", **OPTIONS)
    assert report.plain_python is True and 0 < report.score <= 4 and report.bonus == 0  # (+10 bonus) before
    assert report.bonus_note.endswith("(the bonus needs every public case passed: 0 here)")


# ---- hidden cases that do not change with the seed --------------------------------------------------------------
# Inputs with one to five possible values (an empty draft and no rows; one token; alpha 1 with gamma 0; empty
# logits; alpha nan): a seed may give the shipped one, and a table of them holds only what a one-line answer says.
FIXED_BY_NATURE = {"ex01": {"K = 0, no rows"}, "ex02": {"empty logits raises"}, "ex03": {"one-token vocabulary"},
                   "ex04": {"K = 0, no rows"}, "ex06": {"K = 0, no rows"},
                   "ex05": {"beta: one token", "E[tokens]: alpha 1, gamma 0", "E[tokens]: alpha nan raises"}}


@pytest.mark.parametrize("name", sorted(FIXED_BY_NATURE))
def test_a_secret_seed_changes_every_hidden_input_that_can_change(name):
    """ex03's two rounding cases were fixed rows: a table of the shipped cases took 65/100 there under any --seed."""
    ex = exercise(name)
    shipped = {c.name: c.calls for c in ex.cases(0) if c.hidden}
    for seed in (OPTIONS["seed"], 2):
        same = {c.name for c in ex.cases(seed) if c.hidden and c.calls == shipped[c.name]}
        assert same <= FIXED_BY_NATURE[name], seed


def test_a_table_of_ex03s_shipped_cases_no_longer_answers_its_rounding_cases_under_a_secret_seed():
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


# ---- bad-input cases told apart by their size ------------------------------------------------------------------
def _by_size(draft_tokens, draft_probs, target_probs, rng_or_samples):
    """The hostile file's rule: raise at K = 2 over two tokens (where every bad-input case of ex04 and ex06 was)."""
    rows = draft_probs or target_probs
    if len(draft_tokens) == 2 and rows and len(rows[0]) == 2:
        raise ValueError("bad input (or so its size says)")
    return None


@pytest.mark.parametrize("name", ["ex04", "ex06"])
def test_a_bad_input_case_is_the_shape_cases_twin_but_for_its_fault(name):
    for seed in (0, OPTIONS["seed"]):
        cases = exercise(name).cases(seed)
        shape = next(c for c in cases if c.name.startswith("shape on a random"))
        tokens, q, p, _ = shape.calls[0]["args"]
        for case in (c for c in cases if c.expected == "raises ValueError"):
            bad_tokens, bad_q, bad_p, _ = case.calls[0]["args"]
            assert len(bad_tokens) == len(tokens) and {len(r) for r in bad_q + bad_p} == {len(p[0])}, case.name
    assert check(_by_size, exercise=name, quiet=True, seed=OPTIONS["seed"]).score == 0   # 11 (ex04), 9 (ex06) before


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


@NEEDS_BWRAP
def test_raising_at_the_bad_input_cases_size_earns_nothing():
    report = grade_file(os.path.join(SUBS, "ex04", "hostile_bad_input_by_size.py"), "ex04", **OPTIONS)
    assert (report.score, report.status) == (0, "failed")  # 11/100 before


# ---- a memo that makes a same-seed pair agree ---------------------------------------------------------------------
@NEEDS_BWRAP
@pytest.mark.slow
def test_a_memo_keyed_on_the_rngs_state_no_longer_passes_the_same_seed_case():
    memo = grade_file(os.path.join(SUBS, "ex04", "hostile_memo_same_seed.py"), "ex04", **OPTIONS)
    plain = grade_file(os.path.join(SUBS, "ex04", "wrong_module_random.py"), "ex04", **OPTIONS)
    same = {c.name: c for c in memo.cases}["same seed, same result"]
    assert not same.passed and same.message.startswith(replay.MESSAGE)  # passed (6 points) before
    assert memo.score == plain.score < 100


# ---- outputs impossible for their inputs ------------------------------------------------------------------------
def _support(rule, q, p, k):
    """{(n kept, emitted block)} with probability > 0, from specdec.exact's enumeration (independent of the grader)."""
    law = step_outcomes(lambda s: p[len(s)], lambda s: q[len(s)], k, rule)
    return {key for key, prob in law.items() if prob > 0}


@pytest.mark.parametrize("module, rule", [(ex04, "token"), (ex06, "block")])
def test_possible_outputs_are_exactly_the_support_of_the_rules_law(module, rule):
    """Over every draft of q, the outputs `possible` allows are the outcomes of positive probability of the
    reference enumeration: nothing a correct sampler can give is refused, nothing it cannot is allowed."""
    rng = random.Random(4)
    for _ in range(30):
        k, vocab = rng.randint(1, 3), rng.randint(2, 3)
        q = [dyadic_row(rng, vocab, total=8, denominator=8) for _ in range(k)]
        p = [dyadic_row(rng, vocab, total=8, denominator=8) for _ in range(k + 1)]   # zeros and ties included
        allowed = set()
        for tokens in itertools.product(*[[x for x in range(vocab) if q[i][x] > 0] for i in range(k)]):
            allowed |= {(n, tuple(tokens[:n]) + (y,)) for n, y in module.possible(list(tokens), q, p)}
        exact_q, exact_p = [[Fraction(v) for v in row] for row in q], [[Fraction(v) for v in row] for row in p]
        assert allowed == _support(rule, exact_q, exact_p, k), (q, p)


def _never_verifies(draft_tokens, draft_probs, target_probs, rng):
    """The hostile file's function: emit a sample of target_probs[0], keep nothing."""
    row, cut, total = target_probs[0], rng.random(), 0.0
    for j, w in enumerate(row):
        total += w
        if w > 0 and cut < total:
            return {"accepted_tokens": [], "bonus_token": j, "acceptance_count": 0}
    return {"accepted_tokens": [], "bonus_token": max(j for j, w in enumerate(row) if w > 0), "acceptance_count": 0}


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


# ---- a notebook of millions of tiny values -------------------------------------------------------------------
def test_a_notebook_of_millions_of_values_is_refused_before_it_is_parsed(tmp_path):
    flood = '{"cells": [], "metadata": {"x": [' + "[]," * MAX_VALUES + '[]]}, "nbformat": 4, "nbformat_minor": 5}'
    with pytest.raises(NotebookError, match=f"more than {MAX_VALUES} values"):
        code_cells(flood)
    path = tmp_path / "flood_ex01.ipynb"
    path.write_text(flood)
    report = grade_file(str(path), "ex01", timeout=5.0, mode="process")
    assert report.status == "error" and report.score == 0 and f"more than {MAX_VALUES} values" in report.error
    honest = os.path.join(ROOT, "exercises", "ex01_verify", "ex01_verify.ipynb")
    assert code_cells(open(honest).read())  # an honest notebook holds a few thousand values at most
