"""grader/report.py: what reaches the instructor (labels, CSV cells, the bonus) says only what is true.

File names are labels that are printable, never merge two names (a formula `=x` and `'=x`, lookalike letters:
a Cyrillic o for a Latin o, an accent composed or not) and differ in their ASCII characters alone. The
plain-Python bonus is all or nothing and needs every public case passed (a constant answer once took +10 for
a score of 2). The class-wide CSV and the score line against forged text: tests/grader/test_hostile_class.py.
"""

import os

import pytest
from hypothesis import given, strategies as st

from grader import grade_file
from grader.report import CaseResult, Report, clean, csv_cell, label
from helpers import NEEDS_BWRAP, SUBS

OPTIONS = {"timeout": 5.0, "max_seconds": 40.0, "mode": "bwrap", "seed": 314159}


# ---- labels ----------------------------------------------------------------------------------------------------------
@pytest.mark.slow
@given(st.lists(st.text(max_size=12), min_size=2, max_size=6, unique=True))
def test_labels_are_printable_and_never_merge_two_names(names):
    labels = [label(n) for n in names]
    assert len(set(labels)) == len({csv_cell(x, 10 ** 6) for x in labels}) == len(names)  # '=x' vs "'=x" too
    assert all(clean(x, 10 ** 6) == x for x in labels)  # nothing left for clean() to hide
    # Lookalikes (a Cyrillic o for a Latin o, an accent composed or not): names that differ differ in the
    # labels' ASCII characters alone, which no font draws alike.
    assert len({"".join(ch for ch in x if ch.isascii()) for x in labels}) == len(names)


def test_lookalike_names_are_told_apart_in_ascii():
    # Latin o, Cyrillic o; NFC, NFD
    names = ["good_ex01.py", "g\u043eod_ex01.py", "jos\u00e9_ex01.py", "jose\u0301_ex01.py"]
    assert [label(n) for n in names] == ["good_ex01.py", "g\u043eod_ex01.py [g\\u043eod_ex01.py]",
                                         "jos\u00e9_ex01.py [jos\\xe9_ex01.py]",
                                         "jose\u0301_ex01.py [jose\\u0301_ex01.py]"]


# ---- the plain-Python bonus ------------------------------------------------------------------------------------------
def test_the_bonus_is_all_or_nothing_and_needs_every_case():
    def report(public, hidden, plain=True):  # two public cases (25 points each) and two hidden ones
        cases = [CaseResult(f"p{i}", False, 25, ok) for i, ok in enumerate(public)]
        cases += [CaseResult(f"h{i}", True, 25, ok) for i, ok in enumerate(hidden)]
        return Report("ex01", "t", cases, 100, bonus_points=10, plain_python=plain)
    assert report((True, True), (True, True)).bonus == 10  # 100: a solution
    assert report((True, True), (False, False)).bonus == 0  # every public case (a table of them): not a solution
    assert report((True, True), (True, False)).bonus == 0  # 75: one hidden case failed, not yet a solution
    assert report((True, False), (True, True)).bonus == 0  # 75, a public example failed: not a solution
    assert report((False, False), (True, False)).bonus == 0  # a hidden case or two by luck: nothing
    assert report((True, True), (True, True), plain=False).bonus == 0  # NumPy: no bonus
    assert report((True, True), (True, True), plain=None).bonus == 0  # undecided (no sandbox): no bonus


@pytest.mark.slow
@NEEDS_BWRAP
def test_a_constant_answer_earns_no_bonus():
    report = grade_file(os.path.join(SUBS, "ex01", "hostile_constant_answer.py"), "ex01", **OPTIONS)
    assert report.plain_python is True and 0 < report.score <= 4 and report.bonus == 0  # (+10 bonus) before
    assert report.bonus_note.endswith("no bonus: it needs every case passed, and 29 failed")
