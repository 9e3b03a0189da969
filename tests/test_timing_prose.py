"""The prose of the lessons that time states no measured result: every timing and every sentence about one is printed
by a cell, from what that run measured, so no run on any machine can contradict the text around it.

A timing lesson's markdown (outside its exercises and their solutions, which work with made-up numbers) must hold no
number with a unit of time, a rate (GB/s, GFLOP/s) or a speedup factor (1.3x): those are measurements, and a busy
machine moves them. nbval cannot see the prose, so this is the check that would have caught lesson 07's "n = 0 or
n = gamma more often than one alpha predicts" beside an interval that contained the model, or lesson 09's "passes 2x
at 1.5 MB" above a run that printed 0.01 MB. The verdict sentences themselves come from
`specdec.generation.measure` (`side`, `verdict` and the named verdicts), which tests/library/test_measure.py drives
with synthetic measurements on both sides of each threshold.

Counted results are measurements too (tokens per target call of seeded runs, an estimated gain): no unit marks them,
so a measuring lesson's prose may not quote a number its compared cells print (two or more decimals, or a percentage
with a decimal), unless the code sets that number itself (a design parameter such as typical acceptance's 0.09).
This would have caught lesson 10's "+0.013 drafted tokens per step at gamma 2 (+0.5%)". Qualitative claims about a
measurement ("the gain grows with gamma") have no digits to match: the cells print them as verdicts, from the
intervals, and no test of prose can check their wording.

Each timing lesson also says at its top how long it takes, and its last cell prints how long this run took.
"""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
# The lessons that time (their prose quotes no measurement), and those of them that say at their top how long they
# take and print this run's time in their last cell.
TIMING_LESSONS = ["07_end_to_end", "08_inside_one_target_call", "09_where_the_speedup_comes_from",
                  "11_many_drafts_and_trees", "12_batched_verification"]
TIMED_LESSONS = ["07_end_to_end", "08_inside_one_target_call", "09_where_the_speedup_comes_from",
                 "11_many_drafts_and_trees", "12_batched_verification"]
# The lessons whose prose quotes no printed count either.
COUNTING_LESSONS = ["07_end_to_end", "08_inside_one_target_call", "09_where_the_speedup_comes_from",
                    "10_block_verification", "11_many_drafts_and_trees", "12_batched_verification"]

NUMBER = r"(?<![\w.])\d+(?:[.,]\d+)*"
MEASURED = [
    (re.compile(NUMBER + r"\s?(?:ns|µs|us|ms|s|seconds?|minutes?)\b"), "a time"),
    (re.compile(NUMBER + r"\s?(?:[KMGT]B/s|[KMGT]?FLOP/s|flop/s)\b", re.I), "a rate"),
    (re.compile(NUMBER + r"[x×](?![\w(])"), "a speedup factor"),        # 1.3x, 2×; not 16 x hidden, 4x4
]
# A result a cell prints without a unit: 2 or more decimals (0.013, 2.481), or a percentage with a decimal (+0.5%)
PRINTED = re.compile(r"(?<![\w.])[+\-−]?(\d+\.\d{2,}%?|\d+\.\d+%)")
# Exercises and their solutions work with made-up numbers: the boxes of lessons 01-06, or a "Check yourself" section
EXERCISES = re.compile(r'<div class="exercise">.*?</div>|<details class="solution">.*?</details>'
                       r'|^## Check yourself.*?(?=^## |\Z)', re.S | re.M)


def prose_without_exercises(text):
    return EXERCISES.sub("", text)


def prose(lesson):
    """(the lesson's markdown cells, each without its exercises and solutions; all its cells)."""
    cells = json.loads((NOTEBOOKS / f"{lesson}.ipynb").read_text(encoding="utf-8"))["cells"]
    return [prose_without_exercises("".join(c["source"])) for c in cells if c["cell_type"] == "markdown"], cells


def measured_claims(text):
    """[(what, the phrase)] of every number with a unit of time, a rate or a speedup factor in `text`."""
    return [(what, m.group(0)) for pattern, what in MEASURED for m in pattern.finditer(text)]


def quoted_results(prose_texts, cells):
    """[phrases] of `prose_texts` that quote a number printed by a compared code cell (not tagged nbval-ignore-output:
    its output is the same on every run) and not written in any cell's code."""
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    printed = {number for c in cells if c["cell_type"] == "code"
               and "nbval-ignore-output" not in c["metadata"].get("tags", [])
               for out in c.get("outputs", []) for number in PRINTED.findall("".join(out.get("text", "")))}
    return [m.group(0) for text in prose_texts for m in PRINTED.finditer(text)
            if m.group(1) in printed and m.group(1) not in code]


def test_the_rule_finds_measured_claims_and_passes_design_numbers():
    # what the rule must catch (sentences of the kind the issue found), and what it must let through
    assert measured_claims("a call costs 0.7-0.9 ms on one core") == [("a time", "0.9 ms")]
    assert measured_claims("the prediction passes 2x at S = 1.5 MB") == [("a speedup factor", "2x")]
    assert measured_claims("measured 1.89x against 1.16x") == [("a speedup factor", "1.89x"),
                                                              ("a speedup factor", "1.16x")]
    assert measured_claims("18 GB/s from cache, 99 GFLOP/s peak") == [("a rate", "18 GB/s"), ("a rate", "99 GFLOP/s")]
    assert measured_claims("Lesson 07 took 471 s") == [("a time", "471 s")]
    assert measured_claims("8 prompts per gamma, 100 new tokens each, a 95% interval, 64 MB, r(8), x @ W, 4x4, "
                           "16 x hidden floats, $2 \\times L \\times d$") == []
    assert prose_without_exercises("a\n## Check yourself\n1. at 50 GB/s?\n## What next\nb") == "a\n## What next\nb"


def test_the_counting_rule_finds_printed_results_and_passes_design_numbers():
    def code(source, text="", tags=()):
        return {"cell_type": "code", "source": [source], "metadata": {"tags": list(tags)},
                "outputs": [{"output_type": "stream", "text": [text]}]}
    cells = [code("eps = 0.09", "bar 0.0900 at eps 0.09\n"), code("run()", "    2  +0.013 [+0.006, +0.020]   +0.5%\n"),
             code("time()", "took 1.25 s, 2.481 per call\n", tags=["nbval-ignore-output"])]
    said = ["On identical blocks the gain is +0.013 per step at gamma 2 (+0.5% per call), 0.013 again.",
            "Typical's bar is 0.09; 32 prompts, T = 0.5, a 95% interval, 2.481 (only a timing cell printed it)."]
    assert quoted_results(said, cells) == ["+0.013", "+0.5%", "0.013"]


@pytest.mark.parametrize("lesson", COUNTING_LESSONS)
def test_a_measuring_lesson_quotes_no_printed_result(lesson):
    texts, cells = prose(lesson)
    found = quoted_results(texts, cells)
    assert not found, f"{lesson}: the prose quotes printed results {found}; let the cell print the sentence instead"


@pytest.mark.parametrize("lesson", TIMING_LESSONS)
def test_a_timing_lesson_quotes_no_measurement(lesson):
    cells, _ = prose(lesson)
    found = [(what, phrase) for text in cells for what, phrase in measured_claims(text)]
    assert not found, f"{lesson}: the prose quotes measured results {found}; print them from the cell instead"


@pytest.mark.parametrize("lesson", TIMED_LESSONS)
def test_a_timing_lesson_says_how_long_it_takes_and_its_last_cell_prints_it(lesson):
    texts, cells = prose(lesson)
    assert "**Running it.**" in texts[0], f"{lesson}: the top does not say how long the lesson takes"
    last = [c for c in cells if c["cell_type"] == "code"][-1]
    assert "time.perf_counter() - started" in "".join(last["source"]), f"{lesson}: no run time in the last cell"
    assert "nbval-ignore-output" in last["metadata"].get("tags", []), f"{lesson}: the run time is a measurement"
