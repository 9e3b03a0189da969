"""The grader against the red team, one level down: attacks found after the rebuild, checked without a class.

The class folder that holds the red team's submissions (namespaces and mounts, SysV memory, many
processes, replies the grading process cannot turn into text or takes seconds to parse, exotic
exceptions, the mount table, hostile notebooks, entries no folder should hold) is graded once, with
the first rebuild's attacks, in test_grading_hostile.py. The fast tests here check the same defences
one level down (protocol, notebook reader, file labels, command line), without a sandbox.

Two holes the red team found in ex04's statistics are closed here: a sampler that is right at step 0
and wrong later loses the case that judges the later steps (and gets its own diagnosis), and a file
that never samples but sees each batch whole and hands out exact quotas fails every statistical case,
because its replayed calls (replay.py) do not give the same outputs.
"""

import json
import os
import subprocess
import sys
import time

import pytest
from hypothesis import given, strategies as st

from grader import batch, check, grade_file, protocol, replay, session
from grader.batch import folder_exercise, grade_apart, grade_folder
from grader.diagnose import signatures
from grader.notebook import MAGIC, NotebookError, code_cells, notebook_to_script
from grader.registry import exercise
from grader.report import clean, csv_cell, label
from grader.sandbox import bwrap_problem
from grader.submission import read_code

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions")
OPTIONS = {"timeout": 1.5, "max_seconds": 6.0, "mode": "bwrap", "seed": 314159}
NEEDS_BWRAP = pytest.mark.skipif(bool(bwrap_problem()), reason=f"no sandbox here: {bwrap_problem()}")
# An honest notebook's long cell: %time first, then 90 lines using % and != (none of them a magic).
LONG_CELL = json.load(open(os.path.join(SUBS, "ex01", "good_long_cell.ipynb")))["cells"][1]["source"]


# ---- the grading process of its own --------------------------------------------------------------------------
def test_a_grading_process_past_its_time_is_stopped_and_its_row_says_so(monkeypatch):
    monkeypatch.setattr(batch, "GRACE", 0.0)  # no time beyond the submission's 0.01 s: starting up already exceeds it
    report = grade_apart(os.path.join(SUBS, "ex01", "good_plain.py"), "ex01", timeout=1.0, max_seconds=0.01,
                         mode="process")
    assert (report.status, report.score) == ("error", 0) and "was stopped" in report.error


def test_the_files_must_name_one_exercise(tmp_path):
    for name in ("ex01_alice.py", "ex01_bob.py", "ex03_carol.py", "notes.py"):
        (tmp_path / name).write_text("x = 1\n")
    with pytest.raises(ValueError, match=r"several exercises \(ex01: 2 files, ex03: 1 file\): pass --exercise"):
        grade_folder(str(tmp_path), progress=False, **OPTIONS)
    assert folder_exercise([str(tmp_path / "ex01_alice.py"), str(tmp_path / "notes.py")]) == "ex01"


# ---- one level down: protocol, notebook reader, labels, command line ------------------------------------------
def test_a_deep_structure_where_text_belongs_is_a_protocol_error():
    deep = []
    for _ in range(990):  # str() of this recursed past Python's limit in the grading process
        deep = [deep]
    for info in ({"type": deep, "message": "m"}, {"type": "T", "message": deep}, {"type": "T", "builtin_types": [deep]}):
        with pytest.raises(protocol.ProtocolError, match="texts are not strings"):
            protocol.clean_exception(info)
    with pytest.raises(protocol.ProtocolError):
        protocol.check_reply({"id": 0, "worker_error": deep}, {"id": 0, "calls": [{}]})


def test_a_notebook_nested_too_deeply_is_a_notebook_error():
    with pytest.raises(NotebookError, match="nested too deeply"):
        code_cells('{"cells": ' + "[" * 100000 + "]" * 100000 + "}")


def test_ipython_reads_only_cells_it_reads_quickly_and_only_until_the_deadline():
    flood = "%time x = 1\n" * 2000  # IPython would read this cell again for each of its 2000 magics
    script, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": flood}]}))
    assert script.splitlines().count("%time x = 1") == 2000  # kept as written
    assert len(MAGIC.findall(LONG_CELL)) == 1  # its % formatting and != are not magics: only %time counts
    honest, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": LONG_CELL}]}))
    assert "%time pass" not in honest.splitlines() and "run_line_magic('time', 'pass')" in honest  # transformed
    with pytest.raises(NotebookError, match="took too long"):
        notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": "x = 1"}]}), time.monotonic() - 1)
    unparsable, _ = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": "x = " + "-" * 5000 + "1"}]}))
    assert "-" * 5000 in unparsable  # ast could not read it: kept, for the sandbox to report


@given(st.lists(st.text(max_size=12), min_size=2, max_size=6, unique=True))
def test_labels_are_printable_and_never_merge_two_names(names):
    labels = [label(n) for n in names]
    assert len(set(labels)) == len({csv_cell(x, 10 ** 6) for x in labels}) == len(names)  # '=x' vs "'=x" too
    assert all(clean(x, 10 ** 6) == x for x in labels)  # nothing left for clean() to hide
    # Lookalikes (a Cyrillic o for a Latin o, an accent composed or not): names that differ differ in the
    # labels' ASCII characters alone, which no font draws alike.
    assert len({"".join(ch for ch in x if ch.isascii()) for x in labels}) == len(names)


def test_lookalike_names_are_told_apart_in_ascii():
    names = ["good_ex01.py", "g\u043eod_ex01.py", "jos\u00e9_ex01.py", "jose\u0301_ex01.py"]  # Latin o, Cyrillic o; NFC, NFD
    assert [label(n) for n in names] == ["good_ex01.py", "g\u043eod_ex01.py [g\\u043eod_ex01.py]",
                                         "jos\u00e9_ex01.py [jos\\xe9_ex01.py]", "jose\u0301_ex01.py [jose\\u0301_ex01.py]"]


@pytest.mark.parametrize("args, env, needle", [
    (["x_ex01.py"], {"SPECDEC_GRADE_SEED": "abc"}, "SPECDEC_GRADE_SEED must be an integer, got 'abc'"),
    (["x_ex01.py", "--seed", "abc"], {}, "argument --seed: invalid int value: 'abc'"),
    (["x_ex01.py", "--timeout", "inf"], {}, "--timeout and --max-seconds must be > 0 seconds (and finite)"),
    (["x_ex01.py", "--csv", "g.csv"], {}, "--csv goes with --batch DIR"),
    (["x_ex01.py", "--jobs", "3"], {}, "--jobs goes with --batch DIR"),
    (["--batch", "TMP"], {}, "--batch needs --csv FILE"),
    (["--batch", "TMP", "--csv", "TMP/no/such/folder/g.csv"], {}, "not a file in a folder this user can write to"),
    (["--batch", "TMP", "--csv", "TMP"], {}, "not a file in a folder this user can write to"),
    (["--batch", "TMP", "--csv", "TMP/g.csv", "--jobs", "0"], {}, "--jobs must be between 1 and 64, got 0"),
    (["--batch", "TMP", "--csv", "TMP/g.csv", "--jobs", "-1"], {}, "--jobs must be between 1 and 64, got -1"),
])
def test_bad_options_are_exit_2_with_a_clear_message(tmp_path, args, env, needle):
    """Each misuse is refused before anything is graded: one line, exit 2, no traceback, no CSV."""
    (tmp_path / "a_ex01.py").write_text("def verify_speculative_tokens(*args):\n    return None\n")
    args = [a.replace("TMP", str(tmp_path)) for a in args]
    result = subprocess.run([sys.executable, "-m", "specdec.grade", *args], capture_output=True, text=True, cwd=ROOT,
                            env=dict(os.environ, **env), timeout=60)
    assert result.returncode == 2 and needle in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == "" and not os.path.exists(tmp_path / "g.csv")


def test_help_shows_examples_and_a_batch_says_what_it_could_not_grade(tmp_path):
    shown = subprocess.run([sys.executable, "-m", "specdec.grade", "--help"], capture_output=True, text=True,
                           cwd=ROOT, timeout=60)
    assert shown.returncode == 0 and "examples:\n  python -m specdec.grade exercises/ex01_verify/ex01_verify.py" in shown.stdout
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice_ex01.py").write_text(open(os.path.join(SUBS, "ex01", "good_plain.py")).read())
    (folder / "bob_ex01.py").write_text("def verify_speculative_tokens(:\n")  # a syntax error
    csv_path = tmp_path / "grades.csv"
    result = subprocess.run([sys.executable, "-m", "specdec.grade", "--batch", str(folder), "--csv", str(csv_path),
                             "--sandbox", "process", "--jobs", "1", "--timeout", "5"], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"2 submissions -> {csv_path}: 1 graded, 1 could not be graded (the CSV's error column says why)"
    assert len(open(csv_path).read().splitlines()) == 3  # a header and a row per file


# ---- ex04's statistics: the later steps, and a file that never samples ------------------------------------------
def test_a_sampler_wrong_after_step_0_loses_the_later_steps_case_alone():
    """The red team's first hole (it scored 100): ex04 judged only step 0 and aggregate counts."""
    ex = exercise("ex04")
    cases = {c.name: c for c in ex.cases(0)}
    sigs = signatures(ex, 0, ex.cases(0))  # each trusted mistake, run on every case
    lost = sorted(sigs["late_correction_from_p"])
    # The joint law catches it; since red team 4 so does the mean case, where its later corrections from p are
    # impossible outputs (tests/test_grading_redteam4.py). Step 0 alone decides every other case.
    assert lost == ["mean accepted drafts", "steps after the first: joint law"]
    assert list(sigs.values()).count(sigs["late_correction_from_p"]) == 1
    for call in cases[lost[1]].calls:  # K = 3, step 0 certain: only the later steps decide the law
        tokens, q, p, _ = call["args"]
        assert len(tokens) == 3 and q[0][tokens[0]] == p[0][tokens[0]] == 1.0
    # The learner's file (graded in the sandbox, with its diagnosis, by tests/test_grading.py) loses that case alone.
    module = {}
    exec(open(os.path.join(SUBS, "ex04", "wrong_late_correction_from_p.py")).read(), module)
    report = check(module["speculative_sample"], exercise="ex04", quiet=True)
    assert [c.name for c in report.cases if not c.passed] == lost
    assert report.score == 100 - sum(cases[name].points for name in lost)
    cause = next(m.cause for m in ex.mistakes if m.name == "late_correction_from_p")
    assert report.diagnosis == f"Most likely cause: {cause}."


@NEEDS_BWRAP
@pytest.mark.slow
def test_a_file_that_hands_out_quotas_instead_of_sampling_fails_every_statistical_case():
    """The red team's second hole (it scored 100): it patches the worker, sees each batch whole, never samples."""
    report = grade_file(os.path.join(SUBS, "ex04", "hostile_deterministic.py"), "ex04", timeout=5.0, mode="bwrap")
    statistical = {c.name: c.points for c in exercise("ex04").cases(0) if c.replay}
    lost = {c.name: c.message for c in report.cases if not c.passed}
    assert set(lost) == set(statistical) and report.score == 100 - sum(statistical.values())  # its exact cases are right
    assert all(m.startswith(replay.MESSAGE) for m in lost.values())
    # Since red team 4 "same seed, same result" is replayed too: the failed cases are those of a sampler on the
    # module-level generator, and the diagnosis says so.
    cause = next(m.cause for m in exercise("ex04").mistakes if m.name == "module_random")
    assert report.diagnosis == f"Most likely cause: {cause}."


@pytest.mark.parametrize("body, replayed", [
    ("return 2 * x", ""),                                    # a function of its input: the replay agrees
    ("return len(SEEN)", replay.MESSAGE),                    # a function of what ran before: it does not
    ("while x > 0 and x - 1 not in SEEN:\n        time.sleep(0.01)\n    return 2 * x",  # stalls unless called in order
     "its calls could not be replayed in a fresh sandbox: timed out after 0.5 s"),
])
def test_replayed_calls_must_give_the_same_outputs_in_a_fresh_process(tmp_path, body, replayed):
    path = tmp_path / "f.py"
    path.write_text(f"import time\nSEEN = []\n\n\ndef f(x):\n    SEEN.append(x)\n    {body}\n")
    # Cases run in a secret order (red team 4), a batch's calls in order: the replay's picks, shuffled, do not.
    requests = [{"id": 0, "func": "f", "calls": [{"args": [-1]}]}, {"id": 1, "func": "f", "calls": [
        {"args": [i]} for i in range(40)]}]
    run = session.run(str(path), "f.py", ["f"], requests, "process", timeout=0.5, replays=[False, True])
    assert len(run.outcomes[1]["results"]) == 40 and run.outcomes[1]["replay"] == replayed
    assert "replay" not in run.outcomes[0] and len(run.outcomes[0]["results"]) == 1  # not statistical: not replayed


def test_a_statistical_cases_seeds_do_not_give_away_a_calls_place_in_the_batch():
    for case in (c for c in exercise("ex04").cases(0) if c.replay and c.name != "same seed, same result"):  # pairs
        seeds = [call["args"][3]["$rng"] for call in case.calls]
        # Consecutive seeds would: seed mod N would be each call's place, and quotas keyed on it replay perfectly.
        assert len(set(seeds)) == len(seeds) and len({s % len(seeds) for s in seeds}) < 0.7 * len(seeds)


def test_a_batch_refuses_a_link_even_when_it_appears_after_the_check(tmp_path):
    """A folder learners can still write to could swap a checked file for a link to the course's solution."""
    link = tmp_path / "ex01_mallory.py"
    os.symlink(os.path.join(ROOT, "exercises", "ex01_verify", "solution.py"), link)
    report = grade_file(str(link), "ex01", timeout=1.0, mode="process", links=False)  # what a batch asks for
    assert (report.status, report.score) == ("error", 0) and "symbolic links" in report.error
    fifo = tmp_path / "ex01_fifo.py"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_code(str(fifo))  # without blocking on it
