"""Grading a class (grader/cli.py --batch, gradebook.py, feedback.py, similar.py): what an instructor keeps.

References: small classes built here (a correct file, a catalogued mistake, a copy with renamed names
and comments, a file that is not a submission), graded through the command line as an instructor runs
it; the expected columns, totals and flags are worked out from those files by hand.
"""

import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

from grader import gradebook
from grader.sandbox import bwrap_problem

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUBS = os.path.join(ROOT, "tests", "submissions", "ex01")
SEED = 2718281828
SANDBOX = [] if not bwrap_problem() else ["--sandbox", "process"]


def grade(*args, env=None):
    result = subprocess.run([sys.executable, "-m", "specdec.grade", *args], capture_output=True, text=True,
                            cwd=ROOT, timeout=300, env=env)
    return result.returncode, result.stdout, result.stderr


def _class(folder):
    folder.mkdir()
    shutil.copy(os.path.join(SUBS, "good_plain.py"), folder / "ex01_alice.py")
    shutil.copy(os.path.join(SUBS, "wrong_no_stop.py"), folder / "ex01_bob.py")
    text = open(os.path.join(SUBS, "good_plain.py")).read()
    (folder / "ex01_carol.py").write_text("# my own work, honest\n" + text.replace("accepted", "kept_tokens"))
    (folder / "ex01_dave.txt").write_text("I could not do it")
    return folder


def _read(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_a_class_gets_a_gradebook_feedback_and_similarity_flags_and_no_seed_anywhere(tmp_path):
    folder = _class(tmp_path / "class")
    book, notes = tmp_path / "grades.csv", tmp_path / "feedback"
    code, out, err = grade("--batch", str(folder), "--exercise", "ex01", "--seed", str(SEED), "--csv", str(book),
                           "--feedback", str(notes), *SANDBOX)
    assert code == 0, err
    rows = {r["file"]: r for r in _read(book)}
    header = list(_read(book)[0])
    assert header[:len(gradebook.FIELDS)] == list(gradebook.FIELDS) and len(header) > len(gradebook.FIELDS) + 10
    assert set(rows) == {"ex01_alice.py", "ex01_bob.py", "ex01_carol.py", "ex01_dave.txt"}
    assert rows["ex01_alice.py"]["total"] == "110" and rows["ex01_alice.py"]["bonus"] == "10"
    assert int(rows["ex01_bob.py"]["score"]) < 100 and "after the first rejection" in rows["ex01_bob.py"]["diagnosis"]
    assert rows["ex01_dave.txt"]["status"] == "not graded" and ".txt" in rows["ex01_dave.txt"]["error"]
    assert rows["ex01_dave.txt"]["final"] == "" and rows["ex01_dave.txt"]["total"] == ""        # not a 0
    assert rows["ex01_alice.py"]["final"] == "110" and float(rows["ex01_alice.py"]["seconds"]) > 0
    assert rows["ex01_alice.py"]["similar"].startswith("S1: identical to ex01_carol.py")
    assert rows["ex01_bob.py"]["similar"] == ""
    assert {r["seed_fingerprint"] for r in rows.values()} == {gradebook.seed_fingerprint(SEED)}
    assert "similar files: 1 groups" in out and "4 rows" in out
    shown = out + err + "".join(open(os.path.join(notes, n), encoding="utf-8").read() for n in os.listdir(notes))
    assert str(SEED) not in shown and str(SEED) not in open(book).read()
    feedback = "".join(open(os.path.join(notes, n)).read() for n in os.listdir(notes))
    assert gradebook.seed_fingerprint(SEED) not in feedback
    assert "S1" not in open(notes / "ex01_alice__ex01_alice.py.txt").read()       # the flag is the instructor's
    assert "110" not in open(notes / "ex01_alice__ex01_alice.py.html").read() and \
        "score: 100/100 (+10 bonus)" in open(notes / "ex01_alice__ex01_alice.py.txt").read()
    files = [("ex01_alice", "ex01_alice.py"), ("ex01_bob", "ex01_bob.py"), ("ex01_carol", "ex01_carol.py"),
             ("ex01_dave", "ex01_dave.txt")]
    expected = ["index.csv"] + [f"{s}__{f}.{e}" for s, f in files for e in ("txt", "html")]
    assert sorted(os.listdir(notes)) == sorted(expected)

    # A regrade of one file updates its row and keeps every other one.
    again = tmp_path / "regrade"
    again.mkdir()
    shutil.copy(os.path.join(SUBS, "good_plain.py"), again / "ex01_bob.py")
    code, out, _ = grade("--batch", str(again), "--exercise", "ex01", "--seed", str(SEED), "--csv", str(book), *SANDBOX)
    assert code == 0 and "1 rows written, 3 kept from before" in out
    rows = {r["file"]: r for r in _read(book)}
    assert len(rows) == 4 and rows["ex01_bob.py"]["total"] == "110" and rows["ex01_alice.py"]["total"] == "110"

    # Another exercise's class into this gradebook is refused, and the file is left as it was.
    before = open(book, "rb").read()
    other = tmp_path / "ex02"
    other.mkdir()
    shutil.copy(os.path.join(ROOT, "exercises", "ex02_softmax", "solution.py"), other / "ex02_erin.py")
    code, _, err = grade("--batch", str(other), "--seed", str(SEED), "--csv", str(book), *SANDBOX)
    assert code == 2 and "holds grades of ex01, not ex02" in err and open(book, "rb").read() == before

    # The JSON gradebook is one document on stdout.
    code, out, err = grade("--batch", str(again), "--exercise", "ex01", "--seed", str(SEED), "--json", *SANDBOX)
    document = json.loads(out)
    assert code == 0 and document["rows"][0]["total"] == 110 and str(SEED) not in out


def _book(path, exercise, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=gradebook.FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow(dict.fromkeys(gradebook.FIELDS, "") | {"exercise": exercise, "status": "passed"} | row)
    return str(path)


def test_gradebooks_merge_into_one_lms_table(tmp_path):
    books = [_book(tmp_path / "ex01.csv", "ex01", [
                 {"student": "12345", "name": "smithjohn", "final": 110, "lms": "canvas"},
                 {"student": "23456", "name": "doejane", "final": 40, "lms": "canvas"},
                 {"student": "34567", "name": "leenick", "final": "", "status": "not graded", "lms": "canvas",
                  "error": "not a .py or .ipynb file (.txt)"}]),
             _book(tmp_path / "ex02.csv", "ex02", [{"student": "12345", "name": "smithjohn", "final": 90,
                                                     "lms": "canvas"}])]
    text, warnings = gradebook.merge(books, "canvas")
    assert list(csv.reader(text.splitlines())) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ex01", "ex02"],
        ["smithjohn", "12345", "", "", "", "110", "90"], ["doejane", "23456", "", "", "", "40", ""],
        ["leenick", "34567", "", "", "", "", ""]]                       # not graded: left empty, never 0
    assert warnings == ["34567, ex01: not graded (not a .py or .ipynb file (.txt)): left empty"]
    moodle, warnings = gradebook.merge(books, "moodle")
    assert list(csv.reader(moodle.splitlines()))[1][:3] == ["Participant 12345", "smithjohn", "110"]
    assert any("come from canvas names, not moodle's" in w for w in warnings)   # a layout that cannot match
    code, out, err = grade("gradebook", str(tmp_path / "class.csv"), *books, "--lms", "plain")
    assert code == 0 and "3 students" in out and "warning: 34567, ex01: not graded" in out
    assert list(csv.reader(open(tmp_path / "class.csv")))[:2] == [["student", "ex01", "ex02"], ["12345", "110", "90"]]
    (tmp_path / "junk.csv").write_text("a,b\n1,2\n")
    code, _, err = grade("gradebook", str(tmp_path / "out.csv"), str(tmp_path / "junk.csv"))
    assert code == 2 and "not a gradebook" in err


def test_a_short_or_broken_gradebook_is_a_clear_error_never_a_traceback(tmp_path):
    book = tmp_path / "short.csv"
    book.write_text(",".join(gradebook.FIELDS) + "\n12345,x\n")      # a row of two cells
    text, warnings = gradebook.merge([str(book)], "plain")
    assert text.splitlines()[1] == "12345,"
    (tmp_path / "binary.csv").write_bytes(b"\xff\xfe\x00junk")
    for path in (book, tmp_path / "binary.csv"):
        code, out, err = grade("gradebook", str(tmp_path / "out.csv"), str(path))
        assert code in (0, 2) and "Traceback" not in err, err


@pytest.mark.slow
def test_a_class_is_graded_in_a_sandbox_or_not_at_all(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(os.path.join(SUBS, "good_plain.py"), folder / "ex01_alice.py")
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink(sys.executable, bare / "python3")
    env = dict(os.environ, PATH=str(bare))                       # no bwrap on PATH
    code, out, err = grade("--batch", str(folder), "--exercise", "ex01", "--csv", str(tmp_path / "g.csv"), env=env)
    assert code == 2 and "sandbox or not at all" in err and "apt-get install bubblewrap" in err
    assert not (tmp_path / "g.csv").exists()
    code, out, err = grade("--batch", str(folder), "--exercise", "ex01", "--csv", str(tmp_path / "g.csv"),
                           "--sandbox", "process", env=env)
    assert code == 0 and (tmp_path / "g.csv").exists()


@pytest.mark.slow
def test_every_command_has_help_and_release_help_creates_nothing(tmp_path):
    for command in ([], ["release"], ["gradescope"], ["gradebook"]):
        shown = subprocess.run([sys.executable, "-m", "specdec.grade", *command, "--help"], capture_output=True,
                               text=True, cwd=tmp_path)
        assert shown.returncode == 0 and "usage:" in shown.stdout
    main = subprocess.run([sys.executable, "-m", "specdec.grade", "--help"], capture_output=True, text=True).stdout
    for option in ("--exercise", "--json", "--timeout", "--max-seconds", "--seed", "--sandbox", "--batch", "--csv",
                   "--feedback", "--student-pattern", "--jobs", "release", "gradescope", "gradebook"):
        assert option in main, option
    assert os.listdir(tmp_path) == []                             # `release --help` made no folder named --help


def _canvas(path, entries):
    import zipfile
    with zipfile.ZipFile(path, "w") as z:
        for name, source in entries.items():
            z.writestr(name, open(os.path.join(SUBS, source)).read())
    return str(path)


@pytest.mark.slow
def test_a_term_one_row_per_student_the_policy_decides_which_upload_counts_and_a_regrade_keeps_the_term(tmp_path):
    """Canvas: a student's two attachments (an on-time one with a known mistake, a later, late and correct one),
    graded under each policy; then a regrade after a resubmission, into the same gradebook."""
    from grader.batch import grade_folder
    options = {"timeout": 5.0, "mode": "bwrap" if not bwrap_problem() else "process", "seed": SEED}
    download = _canvas(tmp_path / "submissions.zip", {
        "smithjohn_12345_100_ex01.py": "wrong_no_stop.py",            # on time, 92
        "smithjohn_LATE_12345_200_ex01_v2.py": "good_plain.py",       # late (Canvas says so), 110
        "doejane_23456_300_ex01.py": "good_plain.py"})
    by_policy = {}
    for policy in ("latest", "latest-on-time", "best"):
        reports = grade_folder(download, "ex01", jobs=2, progress=False, policy=policy, late_penalty=20, **options)
        assert [r.student for r in reports] == ["12345", "23456"]       # one row per student
        by_policy[policy] = {r.student: r for r in reports}
    john = {p: r["12345"] for p, r in by_policy.items()}
    assert (john["latest"].source, john["latest"].late, john["latest"].final) == (
        "smithjohn_LATE_12345_200_ex01_v2.py", True, 88)                 # 110 less 20 %
    assert (john["latest-on-time"].source, john["latest-on-time"].late) == ("smithjohn_12345_100_ex01.py", False)
    assert john["latest-on-time"].final == john["latest-on-time"].score < 100
    assert john["best"].final == max(88, john["latest-on-time"].final)
    assert any("smithjohn_12345_100_ex01.py" in line for line in john["latest"].files)   # every file listed
    assert by_policy["latest"]["23456"].person == "doejane" and by_policy["latest"]["23456"].lms == "canvas"

    # The term: the first download had only the on-time file; the second has the late one. Regraded into one
    # gradebook under latest-on-time, the on-time grade stays; under best, the better one.
    first = _canvas(tmp_path / "first.zip", {"smithjohn_12345_100_ex01.py": "wrong_no_stop.py"})
    second = _canvas(tmp_path / "second.zip", {"smithjohn_LATE_12345_200_ex01_v2.py": "good_plain.py"})
    on_time = john["latest-on-time"].final
    for policy, expected in (("latest-on-time", on_time), ("best", max(88, on_time)), ("latest", 88)):
        book = tmp_path / f"term_{policy}.csv"
        for source in (first, second):
            reports = grade_folder(source, "ex01", jobs=1, progress=False, policy=policy, late_penalty=20, **options)
            gradebook.update(str(book), reports, SEED, policy)
        [row] = _read(book)
        assert float(row["final"]) == expected, (policy, row["final"])
        history = json.loads(row["history"])
        assert [h["file"] for h in history] == ["smithjohn_12345_100_ex01.py", "smithjohn_LATE_12345_200_ex01_v2.py"]
        assert "graded in an earlier batch" in row["files"] or policy != "latest"


@pytest.mark.slow
def test_similar_files_are_flagged_across_sections_and_a_gradescope_export_with_their_scores(tmp_path):
    good = open(os.path.join(SUBS, "good_plain.py")).read()
    section_a = tmp_path / "section_a"
    section_a.mkdir()
    (section_a / "ex01_alice.py").write_text(good)
    (section_a / "ex01_erin.py").write_text(open(os.path.join(SUBS, "wrong_no_stop.py")).read())
    export = tmp_path / "gradescope"
    (export / "submission_7").mkdir(parents=True)
    (export / "submission_7" / "mine.py").write_text("# mine\n" + good.replace("accepted", "kept"))
    (export / "submission_metadata.yml").write_text("submission_7:\n  :submitters:\n  - :name: Bob Roe\n"
                                                    "    :sid: '777'\n  :score: 110.0\n")
    book = _book(tmp_path / "a.csv", "ex01", [{"student": "ex01_alice", "final": 110}])
    code, out, err = grade("similar", str(section_a), str(export), "--exercise", "ex01", "--gradebook", book)
    assert code == 0, err
    assert "3 files of ex01 in 2 sources: 2 flagged" in out
    assert "section_a: ex01_alice.py (student ex01_alice, final 110)" in out
    assert "gradescope: mine.py (student 777, Bob Roe, final 110.0)" in out and "erin" not in out


def test_similar_flags_a_copy_between_two_student_folders_whose_files_have_one_name(tmp_path):
    """Every student's folder may hold ex01_verify.py: one name for two files once kept one of them (3 files read
    as 1, nothing flagged); each is named by its student where the names collide."""
    from grader import similar
    folder = tmp_path / "class"
    for student, sub in (("alice", "good_plain.py"), ("bob", "good_plain.py"), ("carol", "wrong_no_stop.py")):
        (folder / student).mkdir(parents=True)
        shutil.copy(os.path.join(SUBS, sub), folder / student / "ex01_verify.py")
    lines, count = similar.across([str(folder)], "ex01")
    assert count == 3
    assert sorted(lines) == ["S1: class: ex01_verify.py (student alice)", "S1: class: ex01_verify.py (student bob)"]


def test_a_regrade_lists_the_earlier_file_that_counts_even_when_its_name_is_inside_the_new_ones(tmp_path):
    """`files` says which file counts across batches: under `best`, a.py (10) graded before ba.py (0) still counts,
    and both say so. The earlier file was once left out because 'a.py' is a substring of 'ba.py: counted', and
    the new file still read 'counted'."""
    from grader.report import CaseResult, Report

    def report(name, passed):
        r = Report("ex01", "t", [CaseResult("a", False, 10, passed)], 10, source=name, student="s1")
        r.files = [f"{name}: counted"]
        return r
    book = str(tmp_path / "grades.csv")
    gradebook.update(book, [report("a.py", True)], 0, "best")
    gradebook.update(book, [report("ba.py", False)], 0, "best")
    row = gradebook.read(book)[1][0]
    assert (row["file"], row["final"]) == ("a.py", "10")
    assert row["files"] == "ba.py: graded, 0 (not counted: best); a.py: graded in an earlier batch, counted"
