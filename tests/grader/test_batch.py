"""grader/batch.py: grading a class folder, a grading process per file, with nothing outliving the grader.

A grading process past its time is stopped and its row says so; a folder must name one exercise. A reply flood
(tests/submissions/ex01/hostile_reply_flood.py: replies of millions of tiny values, sent without end, took one
grading process to 4.8 GB) costs its own cases and no memory, while the honest files of the same batch keep
exactly the grade they get alone. The whole class of hostile files, graded as an instructor grades it:
tests/grader/test_hostile_class.py.
"""

import json
import os
import subprocess
import sys

import pytest

from grader import batch, grade_file, protocol, session
from grader.batch import grade_apart, grade_folder
from helpers import NEEDS_BWRAP, ROOT, SUBS

EX01 = os.path.join(SUBS, "ex01")
FOLDER_OPTIONS = {"timeout": 1.5, "max_seconds": 6.0, "mode": "bwrap", "seed": 314159}
OPTIONS = {"timeout": 2.0, "max_seconds": 8.0, "mode": "bwrap", "seed": 271828}


@pytest.mark.slow
def test_a_grading_process_is_bounded_in_its_own_cpu_time_and_the_host_in_wall_time(monkeypatch):
    """The grading process's own work is bounded in CPU seconds (its judging is the grader's, not the file's); a
    busy machine that stretches its wall time gives a row that says it was the machine, to be regraded."""
    monkeypatch.setattr(batch, "GRADER_CPU", 0.0)   # starting up already spends more
    monkeypatch.setattr(batch, "POLL", 0.05)
    report = grade_apart(os.path.join(SUBS, "ex01", "good_plain.py"), "ex01", timeout=1.0, mode="process")
    assert (report.status, report.score, report.host) == ("error", 0, False) and "CPU time" in report.error
    monkeypatch.setattr(batch, "GRADER_CPU", 1e9)
    monkeypatch.setattr(batch, "HOST_WALL", 0.0)
    report = grade_apart(os.path.join(SUBS, "ex01", "good_plain.py"), "ex01", timeout=1.0, mode="process")
    assert report.status == "error" and report.host and "too busy" in report.error


@pytest.mark.slow
def test_each_file_is_graded_as_the_exercise_its_name_gives(tmp_path):
    """One odd name no longer decides (or refuses) the whole folder: each file gets its own row."""
    for name in ("ex01_alice.py", "ex01_bob.py", "ex03_carol.py", "notes.py"):
        (tmp_path / name).write_text("x = 1\n")
    reports = {r.source: r for r in grade_folder(str(tmp_path), progress=False, **FOLDER_OPTIONS)}
    assert {n: r.exercise for n, r in reports.items()} == {"ex01_alice.py": "ex01", "ex01_bob.py": "ex01",
                                                            "ex03_carol.py": "ex03", "notes.py": ""}
    assert {r.student for r in reports.values()} == {"ex01_alice", "ex01_bob", "ex03_carol", "notes"}
    assert "missing" in reports["ex01_alice.py"].error or reports["ex01_alice.py"].status == "error"
    assert "pass --exercise" in reports["notes.py"].error


# The batch runs as a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so every process it starts that loses its
# parent is re-parented to it, not to init: its live children after grading are exactly what outlived the grader,
# whatever other tests run on the machine at the same time.
BATCH = """
import ctypes, json, os, resource, sys
from grader.batch import grade_folder
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
reports = grade_folder(sys.argv[1], "ex01", jobs=2, progress=False, **json.loads(sys.argv[2]))
survivors = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    if int(stat[1]) == os.getpid() and stat[0] != "Z":
        survivors.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode(errors="replace"))
print(json.dumps({"reports": {r.source: [r.score, r.bonus, r.status, [c.message for c in r.cases]] for r in reports},
                  "peak": max(resource.getrusage(w).ru_maxrss
                              for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)),
                  "survivors": survivors}))
"""


@NEEDS_BWRAP
@pytest.mark.slow
def test_a_reply_flood_costs_its_cases_and_no_memory_and_honest_files_keep_their_grades(tmp_path):
    names = ("good_plain.py", "good_line_separators.ipynb", "hostile_reply_flood.py", "hostile_ansi_at_import.py")
    for name in names:
        (tmp_path / name).write_bytes(open(os.path.join(EX01, name), "rb").read())
    result = subprocess.run([sys.executable, "-c", BATCH, str(tmp_path), json.dumps(OPTIONS)], capture_output=True,
                            text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    reports = out["reports"]
    assert out["peak"] < 1024 ** 2  # KiB: under 1 GiB (the flood took the grading process to 4.8 GB)
    score, bonus, status, messages = reports["hostile_reply_flood.py"]
    assert (score, bonus, status) == (0, 0, "failed")
    flood = f"the sandbox sent a reply with more than {protocol.MAX_ITEMS} values"
    shown = [m.split(" (hint:")[0] for m in messages]
    assert flood in shown  # cases run in a secret order: the first one it answers floods
    # Each case restarts the sandbox, until the replies of the run pass session.MAX_RUN_BYTES in all: then the
    # rest are not run (on a loaded machine the 8 s budget can run out first: "not run" is fair too).
    over = f"the sandbox sent replies of more than {session.MAX_RUN_BYTES // 1024 ** 2} MiB in all"
    assert all(m in (flood, over) or m.startswith(("not run: ", "timed out after ", "the submission's total time"))
               for m in shown), messages
    assert sum(m == flood for m in shown) <= session.MAX_RUN_BYTES // (7 * 1024 ** 2)   # a few cases, then stopped
    assert reports["hostile_ansi_at_import.py"][:3] == [0, 0, "error"]
    for name in ("good_plain.py", "good_line_separators.ipynb"):  # the honest notebook scored 0 before the fix
        alone = grade_file(os.path.join(EX01, name), "ex01", **OPTIONS)
        assert reports[name][:3] == [alone.score, alone.bonus, alone.status] == [100, 10, "passed"], name
    assert out["survivors"] == []  # nothing the grader started outlived it


SPIN = "import os\nos.setsid()\nwhile True:\n    pass\n"


@NEEDS_BWRAP
@pytest.mark.slow
def test_a_class_gets_the_same_scores_quiet_and_beside_a_cpu_hog_on_every_core(tmp_path):
    """Issue 25: at load 40, 11 of 20 honest ex04 files were "stopped" (a wall-clock limit). Time limits are now the
    file's own CPU time and waiting: a correct file and one that loops in its K = 0 cases get the same cases,
    passed and failed, quiet and beside one spinner per core (benchmarks/bench_grade.py: classes of 60)."""
    for name in ("good_plain.py", "hostile_loop_k0.py"):
        (tmp_path / name).write_text(open(os.path.join(EX01, name)).read())
    options = dict(OPTIONS, timeout=0.5)
    quiet = grade_folder(str(tmp_path), "ex01", jobs=2, progress=False, **options)
    hogs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(os.cpu_count() or 2)]
    try:
        loaded = grade_folder(str(tmp_path), "ex01", jobs=2, progress=False, **options)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    outcome = lambda reports: {r.source: [(c.name, c.passed) for c in r.cases] for r in reports}
    assert outcome(quiet) == outcome(loaded)
    assert [r.score for r in quiet] == [r.score for r in loaded] and quiet[0].score == 100


def test_a_file_the_machine_could_not_run_twice_is_not_graded_never_a_low_score():
    from grader.report import CaseResult, Report
    report = Report("ex01", "t", [CaseResult("a", False, 10, False, "not run: the machine was too busy")], 10,
                    host=True)
    assert batch.host_verdict(report).status == "error" and report.final is None and "too busy" in report.error


def test_under_best_the_newest_of_equal_finals_counts_as_over_a_terms_history():
    """`best` has one tie rule in a batch (batch._row_report) and across batches (gradebook.counted): the newest."""
    from grader import gradebook
    from grader.intake import File, Upload
    from grader.report import CaseResult, Report
    graded = []
    for name in ("old.py", "new.py"):   # oldest first, as plan gives them
        upload = Upload("s1", name)
        graded.append((upload, File(name, name), Report("ex01", "t", [CaseResult("a", True, 10, True)], 10)))
    row = batch.Row("s1", "ex01", [(u, f, False) for u, f, _ in graded], [], "", [u for u, _, _ in graded])
    report = batch._row_report(row, graded, {}, "best")
    history = [{"file": f.name, "final": r.final, "late": ""} for _, f, r in graded]
    assert report.files[0] == f"{gradebook.counted(history, 'best')['file']}: counted" == "new.py: counted"
