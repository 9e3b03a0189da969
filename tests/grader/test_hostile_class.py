"""A class folder of hostile submissions, graded once as an instructor grades it: every defence at once.

One class folder holds honest files next to every hostile one of tests/submissions/ex01 (namespaces and
mounts, SysV memory, many processes, fork bombs, replies the grading process takes seconds to parse, exotic
exceptions, the mount table, hostile notebooks), hostile file NAMES (a formula, ANSI codes, a name that passes
for another learner's, names that are not UTF-8) and entries no folder should hold (a symbolic link, a FIFO,
a folder, a poisoned .pyc). It is graded once, in bwrap, with a secret seed, short time limits and --jobs 4;
the tests then assert each verdict. Expected scores are computed from the cases' own inputs (which cases have
K = 0, K = 1, which must raise), never read from the grader's output. Honest files must get exactly the grade
they get alone; after the grader returns, no process any submission started may live. Sandbox-only: skips,
with the reason, where bubblewrap cannot run; the whole file is slow. The same defences one level down,
without a sandbox: test_protocol.py, test_notebook.py, test_report.py, test_worker.py.
"""

import csv
import json
import os
import shutil
import sys
import uuid

import pytest

from grader import grade_file, protocol, worker
from grader import feedback, gradebook, session
from grader.batch import grade_folder
from grader.report import label
from grader.cases import failing_mistakes
from grader.registry import exercise
from helpers import NEEDS_BWRAP, ROOT, SUBS, alive_with

EX01 = os.path.join(SUBS, "ex01")


SECRET = 86753091


TOKEN = "specdec-test-" + uuid.uuid4().hex  # marks the processes the fork bomb and the grandchild start


OPTIONS = {"timeout": 0.5, "max_seconds": 5.0, "mode": "bwrap", "seed": SECRET}


TIMED_OUT = f"timed out after {OPTIONS['timeout']:g} s"


# Every file of the class is graded on the cases of the exercise and the secret (cases.grading_key).
POINTS = {c.name: c.points for c in exercise("ex01").cases(SECRET) if not c.is_twin}


RAISES = {c.name for c in exercise("ex01").cases(SECRET) if c.expected == "raises ValueError" and not c.is_twin}


def cases_of(batch, name):
    """The scored cases the file called `name` in the class folder was graded on (the class's)."""
    return [c for c in exercise("ex01").cases(SECRET) if not c.is_twin]


def k0(batch, name):
    return {c.name for c in cases_of(batch, name) if c.calls[0]["args"][0] == []}


def k1(batch, name):
    return {c.name for c in cases_of(batch, name) if len(c.calls[0]["args"][0]) == 1}


EVIL_NAMES = ("=HYPERLINK(1)_ex01.py", "bad\x1b[31mname\nscore: 100_ex01.py")


IMPOSTOR = "good_pl\x1b[0main.py"  # shown by a terminal as good_plain.py


NOT_UTF8 = (b"ex01_\xff.py", b"ex01_\xfe.py")


# The longest grader tests (one class of ~60 entries, several of which hang until their time limits): slow.
pytestmark = [pytest.mark.slow, NEEDS_BWRAP]


def score_without(*names):
    return 100 - sum(POINTS[n] for n in set().union(*names))


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    for name in sorted(os.listdir(EX01)):
        if name.startswith(("hostile_", "broken_", "good_", "numpy_")) or name in ("wrong_strict_less.py",
                                                                                    "wrong_no_stop.py"):
            (folder / name).write_text(open(os.path.join(EX01, name)).read().replace("MARKER", TOKEN))
    for name in EVIL_NAMES + ("good_again.py",):
        shutil.copy(os.path.join(EX01, "good_plain.py"), folder / name)
    shutil.copy(os.path.join(EX01, "wrong_no_stop.py"), folder / IMPOSTOR)
    for name, source in zip(NOT_UTF8, ("good_plain.py", "wrong_no_stop.py")):
        shutil.copy(os.path.join(EX01, source), os.path.join(os.fsencode(folder), name))
    os.symlink(os.path.join(ROOT, "exercises", "ex01_verify", "solution.py"), folder / "ex01_link.py")
    os.mkfifo(folder / "ex01_fifo.py")  # opening it would block a grader that reads it
    (folder / "ex01_folder.ipynb").mkdir()
    entries = len(os.listdir(folder))  # every one of them is named *.py or *.ipynb
    # A poisoned bytecode file next to an honest submission: a grader that trusted it would score 0.
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / f"good_plain.{sys.implementation.cache_tag}.pyc").write_bytes(b"poison")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    os.environ["SPECDEC_GRADE_SEED"] = str(SECRET)  # in the grader's environment: it must not leak
    try:
        reports = grade_folder(str(folder), "ex01", jobs=4, progress=False, **OPTIONS)  # mostly waiting on time limits
    finally:
        del os.environ["SPECDEC_GRADE_SEED"]
    alive = alive_with(TOKEN)
    gradebook.update(str(folder.parent / "grades.csv"), reports, SECRET)
    after = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    paths = {label(n): os.path.join(os.fsencode(folder), os.fsencode(n)).decode(errors="surrogateescape")
             for n in os.listdir(folder)}
    return {"reports": {r.source: r for r in reports}, "alive": alive, "before": before, "after": after,
            "csv": folder.parent / "grades.csv", "folder": folder, "entries": entries, "paths": paths}


def failed(report):
    return {c.name: c.message for c in report.cases if not c.passed}


# ---- honest files keep their grade; nothing outlives the grader; nothing outside changes -----------------------------
def test_honest_files_keep_exactly_their_grades(batch):
    reports = batch["reports"]
    alone = grade_file(os.path.join(EX01, "wrong_strict_less.py"), "ex01", **OPTIONS)
    assert [(c.name, c.passed) for c in reports["wrong_strict_less.py"].cases] == \
        [(c.name, c.passed) for c in alone.cases]
    honest = ("good_plain.py", "good_again.py", "good_long_cell.ipynb", "ex01_\\xff.py")
    for name in honest + tuple(r for r in reports if "HYPERLINK" in r or "name\\nscore" in r):
        assert (reports[name].score, reports[name].bonus, reports[name].status) == (100, 10, "passed"), name
    for name in ("wrong_no_stop.py", "good_pl\\x1b[0main.py", "ex01_\\xfe.py"):  # the impostor is graded as itself
        loses = {c.name for c in cases_of(batch, name) if "no_stop" in failing_mistakes(exercise("ex01"), c)}
        assert set(failed(reports[name])) == loses, name


def test_every_entry_gets_one_row_and_no_two_rows_share_a_name(batch):
    names = [row["file"] for row in csv.DictReader(open(batch["csv"], newline=""))]   # the gradebook's file column
    assert len(names) == len(set(names)) == batch["entries"]
    assert {"good_pl\\x1b[0main.py", "ex01_\\xff.py", "ex01_\\xfe.py"} <= set(names)
    for name, why in (("ex01_fifo.py", "not a regular file"), ("ex01_folder.ipynb", "nothing to grade: no .py")):
        report = batch["reports"][name]
        assert (report.status, report.score) == ("error", 0) and why in report.error


def test_no_process_a_submission_started_outlives_the_grader(batch):
    assert batch["alive"] == []  # the fork bomb's sleepers and the setsid grandchild died with their sandboxes


def test_no_file_of_the_class_was_touched(batch):
    assert batch["after"] == batch["before"]  # sources, the poisoned .pyc: unchanged, and nothing new


def test_symbolic_link_is_refused(batch):
    report = batch["reports"]["ex01_link.py"]
    assert report.status == "error" and "symbolic link" in report.error and report.score == 0


# ---- each attack gets the verdict it deserves ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["hostile_setsid_grandchild.py", "hostile_write_siblings.py", "hostile_fork_bomb.py",
                                  "hostile_fill_disk.py", "hostile_network.py", "hostile_warns.py",
                                  "hostile_print_flood.py", "hostile_namespace_tmpfs.py", "hostile_sysv_memory.py",
                                  "hostile_process_memory.py"])
def test_misbehaviour_that_harms_nobody_costs_nothing(batch, name):
    report = batch["reports"][name]  # each is correct, and checks that its attack failed (else it raises)
    assert (report.score, report.bonus, report.status) == (100, 10, "passed"), failed(report)


@pytest.mark.parametrize("name, reason", [
    ("hostile_loop_k0.py", TIMED_OUT),                               # an endless loop costs its case
    ("hostile_sys_exit_k0.py", "called sys.exit()"),                  # SystemExit is caught like any error
    ("hostile_os_exit_k0.py", "the worker exited during this case"),  # the worker dies; a fresh one goes on
    ("hostile_memory_k0.py", "raised MemoryError"),                   # 40 GiB against the 2 GiB limit
    ("hostile_channel_k0.py", "the sandbox sent bytes on the reply channel that are not a reply"),
    ("hostile_signal_grader.py", "raised ProcessLookupError"),         # kill(-1): nobody else to signal
])
def test_misbehaving_case_costs_only_that_case(batch, name, reason):
    report = batch["reports"][name]
    assert set(failed(report)) == k0(batch, name)
    assert all(reason in m for m in failed(report).values()), failed(report)
    assert (report.score, report.bonus) == (score_without(k0(batch, name)), 0)  # the bonus needs every case


def test_the_reference_and_the_gradebook_cannot_be_found(batch):
    for name, message in (("hostile_find_reference.py", "raised RuntimeError: found: []"),
                          ("hostile_numpy_renamed.py", "raised RuntimeError: no NumPy found (0 copies)")):
        report = batch["reports"][name]
        assert report.score == 0 and report.bonus == 0
        assert all(message in c.message for c in report.cases if not c.hidden and not c.passed
                   and c.name not in RAISES)


def test_secrets_do_not_leak_into_the_sandbox(batch):
    report = batch["reports"]["hostile_read_secrets.py"]
    leaked = " ".join(failed(report).values()) + report.error
    assert "No such file or directory: '/proc'" in report.error  # issue 19: the sandbox has no /proc at all
    for secret in (str(SECRET), ROOT, str(batch["folder"]), "SPECDEC_GRADE_SEED"):
        assert secret not in leaked


def test_patching_the_worker_earns_only_what_forged_answers_earn(batch):
    report = batch["reports"]["hostile_patch_worker.py"]
    # Raising ValueError was right only where it must raise; raised everywhere, it earns nothing (test_verdict.py).
    assert set(failed(report)) == set(POINTS) and report.score == 0
    assert all("raised ValueError: forged" in c.message for c in report.cases if not c.hidden and c.name not in RAISES)
    assert all(m.startswith("raised ValueError") for n, m in failed(report).items() if n not in RAISES)
    assert all("on the same input without its fault" in failed(report)[n]   # or, a bad row's: no row named
               or "must name the row at fault" in failed(report)[n] for n in RAISES)
    # No pipe in the sandbox (issue 19: refused): its subprocess never starts, so it raises OSError on every valid
    # input; its length checks then earn nothing either (their valid twins raise).
    report = batch["reports"]["hostile_numpy_subprocess.py"]
    assert set(failed(report)) == set(POINTS) and report.score == 0
    assert all("raised OSError" in m for n, m in failed(report).items() if n not in RAISES)


def test_numpy_hidden_from_the_grader_still_costs_the_bonus(batch):
    # hostile_hide_numpy.py imports NumPy at top level and never uses it: issue 19 decides the bonus from the graded
    # function (a top-level statement that needs NumPy is skipped in the plain-Python run), so it earns it.
    report = batch["reports"]["hostile_hide_numpy.py"]
    assert (report.score, report.plain_python, report.bonus) == (100, True, 10)
    for name in ("hostile_numpy_lazy_k0.py", "numpy_correct.py"):
        report = batch["reports"][name]
        assert (report.score, report.plain_python, report.bonus) == (100, False, 0), name
        assert "asked for NumPy" in report.bonus_note


def test_forged_frames_cost_their_cases_and_never_crash_the_grader(batch):
    report = batch["reports"]["hostile_forge_frames.py"]
    forged = {c.name for c in cases_of(batch, "hostile_forge_frames.py") if len(c.calls[0]["args"][2]) <= 1}
    assert set(failed(report)) == forged
    assert all(m.startswith("the sandbox sent ") for m in failed(report).values())


def test_oversized_and_deeply_nested_results_are_refused(batch):
    # The file returns 10 MiB (the worker sends it, the parent refuses it) and 16 MiB (the worker refuses it).
    assert protocol.MAX_REPLY < 10 * 2 ** 20 < worker.MAX_SEND < 16 * 2 ** 20
    messages = failed(batch["reports"]["hostile_huge_reply.py"])
    cases = cases_of(batch, "hostile_huge_reply.py")
    sizes = {len(c.calls[0]["args"][0]) for c in cases if c.name in messages}
    assert sizes == {0, 3, 4} and len(messages) == sum(len(c.calls[0]["args"][0]) in sizes for c in cases)
    text = " ".join(messages.values())
    assert "a result too large to send back" in text and "nested more than" in text
    assert f"(limit {protocol.MAX_REPLY})" in text


def test_always_equal_objects_wrong_types_and_mutation_earn_nothing_extra(batch):
    reports = batch["reports"]
    assert reports["hostile_always_equal.py"].score == reports["hostile_always_equal_values.py"].score == 0
    types = reports["hostile_wrong_types.py"]  # token ids as floats: only raising and "K = 0, no rows" pass
    no_tokens = {c.name for c in cases_of(batch, "hostile_wrong_types.py")
                 if c.calls[0]["args"][0] == [] and c.calls[0]["args"][2] == []}
    assert set(POINTS) - set(failed(types)) == RAISES | no_tokens
    mutated = failed(reports["hostile_mutates.py"])  # it changes draft_probs[0][0] once past validation
    assert set(mutated) == {c.name for c in cases_of(batch, "hostile_mutates.py")
                            if c.calls[0]["args"][1] and c.name not in RAISES}
    assert {m.split(" (hint:")[0] for m in mutated.values()} == \
        {"modified its input draft_probs (inputs must be left unchanged)"}


def test_time_limits_bound_every_kind_of_hang(batch):
    loops = [c.message for c in batch["reports"]["hostile_loop_always.py"].cases]  # cases run in a secret order
    # Three time-outs end the run (its CPU time, or on a loaded machine the wall-clock cap, or the submission's
    # whole budget, since each restart of the sandbox costs time too, may end a case first): no case hangs, and
    # every case after the stop says it was not run.
    stopped = [m for m in loops if m.startswith(("timed out", "the submission's total time"))]
    assert 1 <= len(stopped) <= 3 and any(m.startswith(TIMED_OUT) for m in stopped), loops
    assert all(m.startswith("not run: ") for m in loops if m not in stopped), loops
    # It sleeps 0.1 s per case: time limits count the sandbox's CPU time and its own waiting (session.BLOCKED a
    # case, BLOCKED_TOTAL a file), so its 30 cases and their twins pass within its 30 s of waiting; a file that
    # spins instead is stopped at its CPU time (tests/grader/test_resources.py).
    slow = batch["reports"]["hostile_slow_every_case.py"]
    lost = {c.name: c.message for c in slow.cases if not c.passed}
    assert sum(c.passed for c in slow.cases) >= 12, lost
    # Lost only to time: a case not run, or stopped, or one whose twin was (the twin rule then voids it).
    assert all(m.startswith(("not run:", "timed out", "the submission's total time")) or "renamed" in m
               or "without its fault" in m for m in lost.values()), lost


@pytest.mark.parametrize("name, needle", [
    ("hostile_import_loop.py", "did not finish loading in time"),
    ("hostile_import_sys_exit.py", "SystemExit"),
    ("hostile_import_os_exit.py", "exited (code 0) while loading"),
    ("hostile_import_specdec.py", "without the course package"),
    ("hostile_unhook_specdec.py", "No module named 'specdec'"),
    ("broken_raises_at_import.py", "RuntimeError: boom at import"),
])
def test_dying_at_import_cannot_be_graded(batch, name, needle):
    report = batch["reports"][name]
    assert needle in report.error
    assert (report.score, report.bonus, report.exit_code) == (0, 0, 2)


def test_texts_that_are_not_strings_are_failed_cases_not_a_crash(batch):
    deep = batch["reports"]["hostile_deep_exception.py"]
    assert deep.score == 0 and deep.status == "failed"
    assert set(failed(deep).values()) >= {"the sandbox sent an exception report whose texts are not strings"}
    load = batch["reports"]["hostile_load_report.py"]
    assert (load.status, load.score) == ("error", 0)
    assert load.error == "it could not load, and sent an exception report whose texts are not strings"


def test_a_reply_that_takes_seconds_to_parse_costs_only_its_own_cases(batch):
    report = batch["reports"]["hostile_gil_hog.py"]
    assert report.score == 0 and report.status == "failed"  # and the honest files above kept their grades


def test_exotic_exceptions_fail_their_cases_and_nothing_else(batch):
    report = batch["reports"]["hostile_exotic_exceptions.py"]
    lost = failed(report)
    k0_, k1_ = k0(batch, "hostile_exotic_exceptions.py"), k1(batch, "hostile_exotic_exceptions.py")
    assert set(lost) == k0_ | RAISES | (k1_ - RAISES)
    assert report.score == score_without(k0_, RAISES, k1_)
    assert all(lost[n].startswith(("raised KeyboardInterrupt", "raised GeneratorExit")) for n in k0_)
    assert all(lost[n].startswith("expected ValueError, but it raised ValueError") for n in RAISES)
    # A hidden case names a builtin exception, and a class of the file's own only as such (issue 25: its name
    # could carry the hidden inputs out).
    assert all(lost[n].startswith("raised an exception of its own class") for n in k1_ - RAISES)


def test_the_mount_table_names_neither_the_course_nor_the_class_folder(batch):
    messages = " ".join(failed(batch["reports"]["hostile_read_mounts.py"]).values())
    messages += batch["reports"]["hostile_read_mounts.py"].error  # issue 19: no /proc, so no mount table to read
    assert "No such file or directory: '/proc/self/mountinfo'" in messages
    assert ROOT not in messages and os.path.join(ROOT, "grader") not in messages
    assert str(batch["folder"]) not in messages


def test_hostile_notebooks_are_clean_errors(batch):
    report = batch["reports"]["hostile_deep_json.ipynb"]
    assert (report.status, report.score, report.exit_code) == ("error", 0, 2)
    assert "not a notebook: its JSON is nested too deeply" in report.error


@pytest.mark.parametrize("name, error", [
    ("hostile_unparsable_cell.ipynb", "RecursionError"),
    ("hostile_magic_flood.ipynb", "SyntaxError"),
])
def test_a_cell_that_cannot_be_read_stops_the_run_as_jupyters_run_all_stops(batch, name, error):
    """Cell 1 defines a correct function; cell 2 cannot be compiled (200,000 unary minus signs; more magics than
    IPython reads in time): Run All stops at cell 2, and the function defined above it is graded."""
    report = batch["reports"][name]
    assert (report.status, report.score) == ("passed", 100)
    assert report.notebook_note.startswith(f"cell 2 raised {error}") and "Run All stops at that cell" in \
        report.notebook_note


# ---- what reaches the instructor: table, JSON, CSV -------------------------------------------------------------------
def test_learner_text_cannot_forge_a_score_or_a_formula(batch):
    report = batch["reports"]["hostile_ansi_message.py"]
    table, doc = report.table(), report.to_json()
    assert "\x1b" not in table + doc and sum(line.startswith("score:") for line in table.splitlines()) == 1
    assert table.splitlines()[-1] == report.score_line() and json.loads(doc)["score"] == report.score
    rows = list(csv.reader(open(batch["csv"], newline="")))
    assert len(rows) == len(batch["reports"]) + 1 and all(len(r) == len(rows[0]) for r in rows)
    cells = [cell for row in rows for cell in row]
    assert not any(cell[:1] in ("=", "+", "-", "@") for cell in cells)
    assert "'=HYPERLINK(1)_ex01.py" in cells and "bad\\x1b[31mname\\nscore: 100_ex01.py" in cells
    assert not any(ch in cell for cell in cells for ch in "\x1b\n\r")


def _numbers(args):
    """The distinctive numbers of a case's inputs, as a report could print them (probabilities with digits)."""
    out = set()

    def walk(value):
        if isinstance(value, float) and len(repr(value)) >= 6:
            out.add(repr(value))
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk(args)
    return out


def test_no_hidden_input_reaches_the_learner(batch, tmp_path):
    """Every class is graded on one set of hidden cases, so a file that printed its inputs into its feedback could
    build a classmate's answer sheet (tests/submissions/ex01/hostile_leak_hidden_inputs.py tries every text of its
    own a report shows)."""
    report = batch["reports"]["hostile_leak_hidden_inputs.py"]
    feedback.write([report], str(tmp_path / "fb"))
    shown = report.table() + report.to_json() + "".join(open(os.path.join(tmp_path / "fb", n)).read()
                                                        for n in os.listdir(tmp_path / "fb"))
    hidden = [c for c in exercise("ex01").cases(SECRET) if c.hidden]
    leaked = {n for c in hidden for n in _numbers(c.calls[0]["args"]) if n in shown}
    assert not leaked, sorted(leaked)[:5]
    assert not any("LEAK [" in c.message or "LEAK_" in c.message.split("`")[0] for c in report.cases if c.hidden)
    assert any("LEAK [" in c.message for c in report.cases if not c.hidden and not c.passed)   # public: shown


def test_a_table_of_the_examples_undone_by_matching_columns_earns_only_its_honest_checks(batch, tmp_path):
    source = open(os.path.join(EX01, "hostile_table_renamed.py")).read()
    honest = tmp_path / "ex01_no_table.py"
    honest.write_text(source.replace("    found = _lookup(draft_tokens, draft_probs, target_probs, random_samples)\n"
                                     "    if found is not None:\n        return found\n", ""))
    alone = grade_file(str(honest), "ex01", **OPTIONS)
    table = batch["reports"]["hostile_table_renamed.py"]
    assert table.score == alone.score < 30
    assert [(c.name, c.passed) for c in table.cases] == [(c.name, c.passed) for c in alone.cases]


@pytest.mark.parametrize("name", ["hostile_max_replies.py", "hostile_sleep_ignoring_signals.py"])
def test_a_hostile_file_costs_seconds_not_the_minutes_of_a_wall_clock_cap(batch, name):
    """The red team's held a grading slot for 185 s (replies at the size limit) and 183 s (sleeping, ignoring
    signals). Now: the run's replies are bounded in bytes, and waiting on nothing but itself is the file's own
    time (session.BLOCKED a case, BLOCKED_TOTAL a file)."""
    report = batch["reports"][name]
    assert report.score == 0 and report.seconds < session.BLOCKED_TOTAL + 10, report.seconds
