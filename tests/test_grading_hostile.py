"""The grader against hostile submissions: every attack of tests/submissions/ex01/hostile_*.py, in one class.

One class folder holds honest files next to every hostile one (the first rebuild's attacks and the
red team's: namespaces and mounts, SysV memory, many processes, replies the grading process takes
seconds to parse, exotic exceptions, the mount table, hostile notebooks), hostile file NAMES (a
formula, ANSI codes, a name that passes for another learner's, names that are not UTF-8) and
entries no folder should hold (a symbolic link, a FIFO, a folder, a poisoned .pyc). It is graded
once, in bwrap, with a secret seed, short time limits and --jobs 4, the way an instructor grades;
the tests then assert each verdict. Expected scores are computed from the cases' own inputs (which
cases have K = 0, K = 1, which must raise), never read from the grader's output. Honest files must
get exactly the grade they get alone; after the grader returns, no process any submission started
may live. Sandbox-only tests skip, with the reason, where bubblewrap cannot run. The whole file is
marked slow. (The same defences one level down, without a sandbox: test_grading_redteam.py.)
"""

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from grader import grade_file, protocol, session, worker
from grader.batch import grade_folder, write_csv
from grader.cases import failing_mistakes
from grader.registry import exercise
from grader.sandbox import bwrap_problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions", "ex01")
SECRET = 86753091
TOKEN = "specdec-test-" + uuid.uuid4().hex  # marks the processes the fork bomb and the grandchild start
OPTIONS = {"timeout": 1.0, "max_seconds": 5.0, "mode": "bwrap", "seed": SECRET}
TIMED_OUT = f"timed out after {OPTIONS['timeout']:g} s"
CASES = exercise("ex01").cases(SECRET)
POINTS = {c.name: c.points for c in CASES}
K0 = {c.name for c in CASES if c.calls[0]["args"][0] == []}
K1 = {c.name for c in CASES if len(c.calls[0]["args"][0]) == 1}
RAISES = {c.name for c in CASES if c.expected == "raises ValueError"}
EVIL_NAMES = ("=HYPERLINK(1)_ex01.py", "bad\x1b[31mname\nscore: 100_ex01.py")
IMPOSTOR = "good_pl\x1b[0main.py"  # shown by a terminal as good_plain.py
NOT_UTF8 = (b"ex01_\xff.py", b"ex01_\xfe.py")

# The longest grader tests (one class of ~60 entries, several of which hang until their time limits): slow.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(bool(bwrap_problem()), reason=f"no sandbox here: {bwrap_problem()}")]


def alive_with(token):
    """Pids of live processes whose command line holds `token`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def score_without(*names):
    return 100 - sum(POINTS[n] for n in set().union(*names))


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    for name in sorted(os.listdir(SUBS)):
        if name.startswith(("hostile_", "broken_", "good_", "numpy_")) or name in ("wrong_strict_less.py",
                                                                                    "wrong_no_stop.py"):
            (folder / name).write_text(open(os.path.join(SUBS, name)).read().replace("MARKER", TOKEN))
    for name in EVIL_NAMES + ("good_again.py",):
        shutil.copy(os.path.join(SUBS, "good_plain.py"), folder / name)
    shutil.copy(os.path.join(SUBS, "wrong_no_stop.py"), folder / IMPOSTOR)
    for name, source in zip(NOT_UTF8, ("good_plain.py", "wrong_no_stop.py")):
        shutil.copy(os.path.join(SUBS, source), os.path.join(os.fsencode(folder), name))
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
    write_csv(reports, str(folder.parent / "grades.csv"))
    after = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    return {"reports": {r.source: r for r in reports}, "alive": alive, "before": before, "after": after,
            "csv": folder.parent / "grades.csv", "folder": folder, "entries": entries}


def failed(report):
    return {c.name: c.message for c in report.cases if not c.passed}


# ---- honest files keep their grade; nothing outlives the grader; nothing outside changes ----------------
def test_honest_files_keep_exactly_their_grades(batch):
    reports = batch["reports"]
    alone = grade_file(os.path.join(SUBS, "wrong_strict_less.py"), "ex01", **OPTIONS)
    assert [(c.name, c.passed) for c in reports["wrong_strict_less.py"].cases] == [(c.name, c.passed) for c in alone.cases]
    honest = ("good_plain.py", "good_again.py", "good_long_cell.ipynb", "ex01_\\xff.py")
    for name in honest + tuple(r for r in reports if "HYPERLINK" in r or "name\\nscore" in r):
        assert (reports[name].score, reports[name].bonus, reports[name].status) == (100, 10, "passed"), name
    loses = {c.name for c in CASES if "no_stop" in failing_mistakes(exercise("ex01"), c)}  # the trusted mistake
    for name in ("wrong_no_stop.py", "good_pl\\x1b[0main.py", "ex01_\\xfe.py"):  # the impostor is graded as itself
        assert set(failed(reports[name])) == loses, name


def test_every_entry_gets_one_row_and_no_two_rows_share_a_name(batch):
    names = [row[0] for row in list(csv.reader(open(batch["csv"], newline="")))[1:]]
    assert len(names) == len(set(names)) == batch["entries"]
    assert {"good_pl\\x1b[0main.py", "ex01_\\xff.py", "ex01_\\xfe.py"} <= set(names)
    for name in ("ex01_fifo.py", "ex01_folder.ipynb"):
        report = batch["reports"][name]
        assert (report.status, report.score) == ("error", 0) and "not a regular file" in report.error


def test_no_process_a_submission_started_outlives_the_grader(batch):
    assert batch["alive"] == []  # the fork bomb's sleepers and the setsid grandchild died with their sandboxes


def test_no_file_of_the_class_was_touched(batch):
    assert batch["after"] == batch["before"]  # sources, the poisoned .pyc: unchanged, and nothing new


def test_symbolic_link_is_refused(batch):
    report = batch["reports"]["ex01_link.py"]
    assert report.status == "error" and "symbolic link" in report.error and report.score == 0


# ---- each attack gets the verdict it deserves ------------------------------------------------------------
@pytest.mark.parametrize("name", ["hostile_setsid_grandchild.py", "hostile_write_siblings.py", "hostile_fork_bomb.py",
                                  "hostile_fill_disk.py", "hostile_network.py", "hostile_warns.py",
                                  "hostile_print_flood.py", "hostile_namespace_tmpfs.py", "hostile_sysv_memory.py",
                                  "hostile_process_memory.py"])
def test_misbehaviour_that_harms_nobody_costs_nothing(batch, name):
    report = batch["reports"][name]  # each is correct, and checks that its attack failed (else it raises)
    assert (report.score, report.bonus, report.status) == (100, 10, "passed"), failed(report)


@pytest.mark.parametrize("name, reason", [
    ("hostile_loop_k0.py", TIMED_OUT),                               # an endless loop costs its case
    ("hostile_sys_exit_k0.py", "called sys.exit(3)"),                 # SystemExit is caught like any error
    ("hostile_os_exit_k0.py", "the worker exited (code 0)"),          # the worker dies; a fresh one goes on
    ("hostile_memory_k0.py", "raised MemoryError"),                   # 40 GiB against the 2 GiB limit
    ("hostile_channel_k0.py", "the sandbox sent bytes on the reply channel that are not a reply"),
    ("hostile_signal_grader.py", "raised ProcessLookupError"),         # kill(-1): nobody else to signal
])
def test_misbehaving_case_costs_only_that_case(batch, name, reason):
    report = batch["reports"][name]
    assert set(failed(report)) == K0
    assert all(reason in m for m in failed(report).values()), failed(report)
    assert (report.score, report.bonus) == (score_without(K0), 10)  # K0 cases are hidden: every public one passes


def test_the_reference_and_the_gradebook_cannot_be_found(batch):
    for name, message in (("hostile_find_reference.py", "raised RuntimeError: found: []"),
                          ("hostile_numpy_renamed.py", "raised RuntimeError: no NumPy found (0 copies)")):
        report = batch["reports"][name]
        assert report.score == 0 and report.bonus == 0
        assert all(message in m for n, m in failed(report).items() if n not in RAISES)


def test_secrets_do_not_leak_into_the_sandbox(batch):
    report = batch["reports"]["hostile_read_secrets.py"]
    leaked = " ".join(failed(report).values())
    assert "leak: " in leaked
    for secret in (str(SECRET), ROOT, str(batch["folder"]), "SPECDEC_GRADE_SEED"):
        assert secret not in leaked


def test_patching_the_worker_earns_only_what_forged_answers_earn(batch):
    for name, error in (("hostile_patch_worker.py", "raised ValueError: forged"),
                        ("hostile_numpy_subprocess.py", "raised JSONDecodeError")):
        report = batch["reports"][name]
        # Raising ValueError was right only where it must raise; raised everywhere, it earns nothing (red team 3).
        assert set(failed(report)) == {c.name for c in CASES} and report.score == 0
        assert all(error in m for n, m in failed(report).items() if n not in RAISES)
        assert all("where it must not" in failed(report)[n] for n in RAISES)


def test_numpy_hidden_from_the_grader_still_costs_the_bonus(batch):
    for name in ("hostile_hide_numpy.py", "hostile_numpy_lazy_k0.py", "numpy_correct.py"):
        report = batch["reports"][name]
        assert (report.score, report.plain_python, report.bonus) == (100, False, 0), name
        assert "asked for NumPy" in report.bonus_note


def test_forged_frames_cost_their_cases_and_never_crash_the_grader(batch):
    report = batch["reports"]["hostile_forge_frames.py"]
    forged = {c.name for c in CASES if len(c.calls[0]["args"][2]) <= 1}  # where the file forges
    assert set(failed(report)) == forged
    assert all(m.startswith("the sandbox sent ") for m in failed(report).values())


def test_oversized_and_deeply_nested_results_are_refused(batch):
    # The file returns 10 MiB (the worker sends it, the parent refuses it) and 16 MiB (the worker refuses it).
    assert protocol.MAX_REPLY < 10 * 2 ** 20 < worker.MAX_SEND < 16 * 2 ** 20
    messages = failed(batch["reports"]["hostile_huge_reply.py"])
    sizes = {len(c.calls[0]["args"][0]) for c in CASES if c.name in messages}
    assert sizes == {0, 3, 4} and len(messages) == sum(len(c.calls[0]["args"][0]) in sizes for c in CASES)
    text = " ".join(messages.values())
    assert "a result too large to send back" in text and "nested more than" in text
    assert f"(limit {protocol.MAX_REPLY})" in text


def test_always_equal_objects_wrong_types_and_mutation_earn_nothing_extra(batch):
    reports = batch["reports"]
    assert reports["hostile_always_equal.py"].score == reports["hostile_always_equal_values.py"].score == 0
    types = reports["hostile_wrong_types.py"]  # token ids as floats: only raising and "K = 0, no rows" pass
    no_tokens = {c.name for c in CASES if c.calls[0]["args"][0] == [] and c.calls[0]["args"][2] == []}
    assert set(POINTS) - set(failed(types)) == RAISES | no_tokens
    mutated = failed(reports["hostile_mutates.py"])  # it changes draft_probs[0][0] once past validation
    assert set(mutated) == {c.name for c in CASES if c.calls[0]["args"][1] and c.name not in RAISES}
    assert {m.split(" (hint:")[0] for m in mutated.values()} == {"modified its input draft_probs (inputs must be left unchanged)"}


def test_time_limits_bound_every_kind_of_hang(batch):
    loops = [c.message for c in batch["reports"]["hostile_loop_always.py"].cases]  # cases run in a secret order
    timed_out = [m for m in loops if m.startswith(TIMED_OUT)]  # a hidden case's message ends with its hint
    assert len(timed_out) == 3
    assert all(m.startswith("not run: 3 cases already timed out") for m in loops if m not in timed_out)
    slow = batch["reports"]["hostile_slow_every_case.py"]  # 0.5 s per case, 24 cases: the 5 s cap stops it
    assert any(c.passed for c in slow.cases)
    assert any(c.message.startswith(f"not run: the submission's total time ({OPTIONS['max_seconds']:g} s) ran out")
               for c in slow.cases)


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
    assert set(lost) == K0 | RAISES | (K1 - RAISES)
    assert report.score == score_without(K0, RAISES, K1)
    assert all(lost[n].startswith(("raised KeyboardInterrupt", "raised GeneratorExit")) for n in K0)
    assert all(lost[n].startswith("expected ValueError, but it raised ValueError") for n in RAISES)
    assert all(lost[n].startswith("raised Unprintable: (str() of the exception failed)") for n in K1 - RAISES)


def test_the_mount_table_names_neither_the_course_nor_the_class_folder(batch):
    messages = " ".join(failed(batch["reports"]["hostile_read_mounts.py"]).values())
    assert "leak: " in messages and "/grader/worker.py" in messages and "/work/submission.py" in messages
    assert ROOT not in messages and os.path.join(ROOT, "grader") not in messages and str(batch["folder"]) not in messages


@pytest.mark.parametrize("name, error", [
    ("hostile_deep_json.ipynb", "not a notebook: its JSON is nested too deeply"),
    ("hostile_unparsable_cell.ipynb", "RecursionError: maximum recursion depth exceeded during compilation"),
    ("hostile_magic_flood.ipynb", "SyntaxError: invalid syntax (hostile_magic_flood.ipynb, line "),
])
def test_hostile_notebooks_are_clean_errors(batch, name, error):
    report = batch["reports"][name]
    assert (report.status, report.score, report.exit_code) == ("error", 0, 2) and error in report.error


# ---- what reaches the instructor: table, JSON, CSV -------------------------------------------------------
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


def test_cli_json_stays_one_document_whatever_the_submission_prints(tmp_path):
    for name in ("hostile_fake_score.py", "hostile_setsid_grandchild.py", "hostile_ansi_message.py"):
        path = tmp_path / name
        path.write_text(open(os.path.join(SUBS, name)).read().replace("MARKER", TOKEN))
        result = subprocess.run([sys.executable, "-m", "specdec.grade", str(path), "--exercise", "ex01", "--json"],
                                capture_output=True, text=True, cwd=ROOT, timeout=120)
        doc = json.loads(result.stdout)  # exactly one document, or this raises
        assert doc["file"] == name and len(result.stderr) < 2000
    assert alive_with(TOKEN) == []


# ---- the sandbox itself ------------------------------------------------------------------------------------
PROBE = '''
import os, socket
def look(what):
    if what == "fs":
        return sorted(os.listdir("/")), sorted(os.listdir(os.getcwd())), os.getuid() != 0, os.path.exists("/etc")
    if what == "procs":
        return sorted(p for p in os.listdir("/proc") if p.isdigit())
    if what == "write":
        out = []
        for path in (os.path.join(os.getcwd(), "x"), "/usr/lib/x", "/x"):
            try:
                open(path, "w").close()
                out.append(path)
            except OSError:
                pass
        return out
    if what == "net":
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=2)
            return "connected"
        except OSError as exc:
            return type(exc).__name__
'''


def test_the_sandbox_shows_only_the_submission_and_the_interpreter(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    requests = [{"id": i, "func": "look", "calls": [{"args": [w]}]} for i, w in enumerate(("fs", "procs", "write", "net"))]
    run = session.run(str(path), "probe.py", ["look"], requests, "bwrap", timeout=10.0)
    (root, work, unprivileged, etc), procs, writable, net = [o["results"][0]["value"] for o in run.outcomes]
    assert work == ["probe.py"] and unprivileged and not etc
    assert set(root) <= {"dev", "grader", "lib", "lib64", "proc", "root", "tmp", "usr", "work"}
    assert len(procs) <= 3  # bwrap's init, the worker, and nothing of the grader's
    assert writable == [] and net == "OSError"


def test_without_bwrap_auto_warns_and_falls_back(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # no bwrap on this PATH
    cmd = [sys.executable, "-m", "specdec.grade", os.path.join(SUBS, "good_plain.py"), "--exercise", "ex01"]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert result.stderr.splitlines()[0].startswith("warning: grading WITHOUT a sandbox (bubblewrap (bwrap) is not installed)")
    assert result.returncode == 0 and result.stdout.splitlines()[-1] == "score: 100/100 (+10 bonus)"
    assert "not sandboxed" in result.stdout
    strict = subprocess.run(cmd + ["--sandbox", "bwrap"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert strict.returncode == 2 and "--sandbox bwrap: bubblewrap (bwrap) is not installed" in strict.stderr


def test_process_fallback_still_refuses_the_bonus_to_numpy():
    report = grade_file(os.path.join(SUBS, "hostile_hide_numpy.py"), "ex01", timeout=5.0, mode="process")
    assert (report.score, report.bonus, report.sandbox) == (100, 0, "process")


def test_a_lookup_table_of_the_shipped_cases_earns_no_hidden_point_under_a_secret_seed(tmp_path):
    shipped = exercise("ex01").cases(0)
    key = lambda args: hashlib.sha256(json.dumps(args).encode()).hexdigest()
    table = {key(c.calls[0]["args"]): c.expected for c in shipped}
    path = tmp_path / "ex01_table.py"
    path.write_text("import hashlib, json\nTABLE = " + repr(table) + "\n"
                    "def verify_speculative_tokens(*args):\n"
                    "    answer = TABLE[hashlib.sha256(json.dumps(list(args)).encode()).hexdigest()]\n"
                    "    if answer == 'raises ValueError':\n        raise ValueError('from the table')\n"
                    "    return eval(answer)\n")
    assert grade_file(str(path), timeout=5.0, seed=0).score == 100
    secret = grade_file(str(path), timeout=5.0, seed=SECRET)
    same_inputs = {c.name for c, s in zip(shipped, CASES) if c.calls == s.calls}
    assert {c.name for c in secret.cases if c.passed and c.hidden} == {n for n in same_inputs if n not in
                                                                      {c.name for c in CASES if not c.hidden}}
    assert same_inputs - {c.name for c in CASES if not c.hidden} == {"K = 0, no rows"}  # the only fixed hidden input


def test_an_int_of_401_digits_is_a_failed_case_not_a_crash():
    for name in ("ex02", "ex05"):
        report = grade_file(os.path.join(ROOT, "tests", "submissions", name, "hostile_huge_int.py"), name,
                            timeout=5.0, mode="bwrap")
        assert (report.error, report.score, report.exit_code) == ("", 0, 1)  # it never raises, so every case fails
        values = {c.name for c in exercise(name).cases(0) if not c.expected.startswith("raises")}
        assert all("an int with 401 digits" in c.message for c in report.cases if c.name in values)
