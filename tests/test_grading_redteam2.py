"""The grader against the third red team: attacks that worked on the rebuilt grader, and their classes.

- a reply flood (tests/submissions/ex01/hostile_reply_flood.py): replies of millions of tiny values, sent
  without end, piled up parsed in the grading process (4.8 GB for one file). Now a reply is counted
  before it is parsed (at most protocol.MAX_ITEMS values) and at most one parsed reply waits.
- learner text on stderr (hostile_ansi_at_import.py): the command's `cannot grade FILE: ERROR` line
  printed the import error raw, ANSI codes and a fake `score:` line included. Now cleaned like the rest.
- line separators in a notebook (good_line_separators.ipynb, an HONEST file): str.splitlines() cut cells
  at U+2028, U+2029, \\x85 and \\x0c, which Python does not, so a pasted comment became code (score 0).
- raising the expected exception everywhere (tests/submissions/ex02/hostile_raise_everywhere.py): every
  bad-input case wants a ValueError, so `raise ValueError` solved nothing and earned 9-19 points. Now a
  case passed by raising earns nothing when the file raises that exception on valid input too.

Batch tests grade several files at once, in bwrap, with a secret seed; the honest ones must get exactly
the grade they get alone, and nothing a submission started may outlive the grader.
"""

import json
import os
import subprocess
import sys

import pytest

from grader import check, grade_file, protocol
from grader.notebook import notebook_to_script, python_lines
from grader.registry import exercise
from grader.sandbox import bwrap_problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions", "ex01")
NEEDS_BWRAP = pytest.mark.skipif(bool(bwrap_problem()), reason=f"no sandbox here: {bwrap_problem()}")
OPTIONS = {"timeout": 2.0, "max_seconds": 8.0, "mode": "bwrap", "seed": 271828}


# ---- one level down, no sandbox -------------------------------------------------------------------------------
def test_a_reply_of_too_many_values_is_refused_before_it_is_parsed():
    n = protocol.MAX_ITEMS  # 3 bytes a value: under the 8 MiB frame limit, each one a list once parsed
    with pytest.raises(protocol.ProtocolError, match=f"more than {protocol.MAX_ITEMS} values"):
        protocol.parse(b"[" + b"[]," * n + b"[]]")
    honest = json.dumps({"id": 0, "results": [{"value": [0.5] * 50000, "args": [[0.5] * 50000]}]}).encode()
    assert len(protocol.parse(honest)["results"][0]["value"]) == 50000  # the largest honest reply still passes


def test_cells_are_cut_into_lines_where_python_cuts_them():
    assert python_lines("# a\u2028b\u2029c\x85d\x0ce\nx = 1\r\ny = 2\rz = 3\n") == \
        ["# a\u2028b\u2029c\x85d\x0ce", "x = 1", "y = 2", "z = 3"]
    cell = "# see\u2028 the paper\nx = 1\ncheck(f)\ny = 2\n"
    script, where = notebook_to_script(json.dumps({"cells": [{"cell_type": "code", "source": cell}]}))
    lines = python_lines(script)
    assert lines[where.index((1, 1))] == "# see\u2028 the paper"  # still one comment
    assert [lines[where.index((1, i))] for i in (2, 3, 4)] == ["x = 1", "pass", "y = 2"]  # the check, not y, dropped


# ---- the command line: learner text on stderr ----------------------------------------------------------------
@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_an_import_error_reaches_stderr_as_one_clean_line(flag):
    result = subprocess.run([sys.executable, "-m", "specdec.grade", os.path.join(SUBS, "hostile_ansi_at_import.py"),
                             "--exercise", "ex01", "--sandbox", "process", *flag],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if not line.startswith("warning:")]
    assert len(errors) == 1 and errors[0].startswith("cannot grade hostile_ansi_at_import.py: RuntimeError: ")
    assert not any(ch in result.stderr + result.stdout for ch in "\x1b\x07\r")
    shown = result.stdout.splitlines()
    if flag:
        assert len(shown) == 1 and json.loads(shown[0])["score"] == 0
    else:
        assert [line for line in shown if line.startswith("score:")] == ["score: 0/100"] == shown[-1:]


# ---- a batch, in bwrap ---------------------------------------------------------------------------------------
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
                  "peak": max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)),
                  "survivors": survivors}))
"""


@NEEDS_BWRAP
@pytest.mark.slow
def test_a_reply_flood_costs_its_cases_and_no_memory_and_honest_files_keep_their_grades(tmp_path):
    names = ("good_plain.py", "good_line_separators.ipynb", "hostile_reply_flood.py", "hostile_ansi_at_import.py")
    for name in names:
        (tmp_path / name).write_bytes(open(os.path.join(SUBS, name), "rb").read())
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
    # Each case restarts the sandbox; on a loaded machine the 8 s budget can run out first: "not run" is fair.
    assert all(m == flood or m.startswith(("not run: ", "timed out after ", "the submission's total time")) for m in shown), messages
    assert reports["hostile_ansi_at_import.py"][:3] == [0, 0, "error"]
    for name in ("good_plain.py", "good_line_separators.ipynb"):  # the honest notebook scored 0 before the fix
        alone = grade_file(os.path.join(SUBS, name), "ex01", **OPTIONS)
        assert reports[name][:3] == [alone.score, alone.bonus, alone.status] == [100, 10, "passed"], name
    assert out["survivors"] == []  # nothing the grader started outlived it


# ---- raising the expected exception everywhere -----------------------------------------------------------------
def _raise_everywhere(*args):
    raise ValueError("no")


def _validates_only(draft_tokens, draft_probs, target_probs, random_samples):
    """An honest learner half way: the checks written, the rest not yet."""
    k = len(draft_tokens)
    if len(draft_probs) != k or len(random_samples) != k or len(target_probs) < k:
        raise ValueError("lengths do not match")
    raise NotImplementedError("the walk comes next")


@pytest.mark.parametrize("name", ["ex01", "ex02", "ex03", "ex04", "ex06"])
def test_raising_valueerror_on_every_input_earns_no_validation_points(name):
    report = check(_raise_everywhere, exercise=name, quiet=True)  # it earned 9 to 19 points before
    raises = [c for c in exercise(name).cases(0) if c.expected == "raises ValueError"]
    assert raises and report.score == 0 and report.status == "failed"
    by_name = {c.name: c for c in report.cases}
    assert all("where it must not" in by_name[c.name].message for c in raises)


def test_validation_that_discriminates_keeps_its_points():
    report = check(_validates_only, exercise="ex01", quiet=True)
    raises = {c.name: c.points for c in exercise("ex01").cases(0) if c.expected == "raises ValueError"}
    assert {c.name for c in report.cases if c.passed} == set(raises) and report.score == sum(raises.values()) > 0


@NEEDS_BWRAP
def test_a_made_up_subclass_of_valueerror_raised_everywhere_earns_nothing_in_the_sandbox():
    report = grade_file(os.path.join(ROOT, "tests", "submissions", "ex02", "hostile_raise_everywhere.py"), "ex02",
                        **OPTIONS)
    assert (report.score, report.status) == (0, "failed")
    assert sum("raises ValueError where it must not" in c.message for c in report.cases) == \
        sum(c.expected == "raises ValueError" for c in exercise("ex02").cases(OPTIONS["seed"])) > 0
