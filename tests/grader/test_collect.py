"""Collection as an LMS delivers it (grader/collect.py): every entry gets a row, ids follow the LMS's names.

References: folders and zip files built here by hand, in the layouts Canvas and Moodle download
(Canvas: `lastnamefirstname[_LATE]_<user id>_<attachment id>_<file>`; Moodle: one folder per student,
`<Full Name>_<participant id>_assignsubmission_file_`), and hostile archives (path traversal, links,
a zip bomb).
"""

import os
import stat
import zipfile

import pytest

from grader.collect import MAX_UNPACKED, check_pattern, collect, student_of

GOOD = "def verify_speculative_tokens(d, q, p, u):\n    return {}\n"


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def _rows(folder, tmp_path, pattern=None):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return [(e.student, e.name, bool(e.path), e.problem) for e in collect(str(folder), str(work), pattern)]


def test_files_folders_and_other_entries_each_get_a_row(tmp_path):
    folder = tmp_path / "class"
    (folder / "bob").mkdir(parents=True)
    (folder / "ex01_alice.py").write_text(GOOD)
    (folder / "bob" / "ex01.ipynb").write_text("{}")
    (folder / "carol").mkdir()                                   # an empty folder
    (folder / "dave").mkdir()
    (folder / "dave" / "a.py").write_text(GOOD)
    (folder / "dave" / "b.py").write_text(GOOD)                  # two candidates
    (folder / "notes.txt").write_text("hi")
    os.symlink(folder / "ex01_alice.py", folder / "ex01_link.py")
    os.mkfifo(folder / "ex01_fifo.py")
    rows = _rows(folder, tmp_path)
    by_name = {name: (student, graded, problem) for student, name, graded, problem in rows}
    assert len(rows) == 7
    assert by_name["ex01_alice.py"] == ("ex01_alice", True, "")
    assert by_name[os.path.join("bob", "ex01.ipynb")][:2] == ("bob", True)
    assert "no .py or .ipynb" in by_name["carol"][2]
    assert "2 candidate files" in by_name["dave"][2]
    assert "not a .py or .ipynb submission (.txt)" in by_name["notes.txt"][2]
    assert "symbolic link" in by_name["ex01_link.py"][2] and "FIFO" in by_name["ex01_fifo.py"][2]


def test_a_canvas_bulk_download_gives_one_entry_per_student_keyed_on_the_user_id(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    _zip(folder / "submissions.zip", {"smithjohn_12345_67890_ex01_verify.py": GOOD,
                                     "doejane_LATE_23456_78901_ex01_verify-1.ipynb": "{}",
                                     "leenick_34567_89012_readme.txt": "no code"})
    rows = sorted(_rows(folder, tmp_path))
    assert [(s, graded) for s, _, graded, _ in rows] == [("12345", True), ("23456", True), ("34567", False)]
    assert all(name.startswith("submissions.zip: ") for _, name, _, _ in rows)


def test_a_moodle_bulk_download_gives_the_participant_ids(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    _zip(folder / "moodle.zip", {"Jane Doe_4711_assignsubmission_file_/ex01.py": GOOD,
                                 "John Roe_4712_assignsubmission_file_/ex01_verify.ipynb": "{}",
                                 "Ann Poe_4713_assignsubmission_file_/a.py": GOOD,
                                 "Ann Poe_4713_assignsubmission_file_/b.py": GOOD})
    rows = sorted(_rows(folder, tmp_path))
    assert [(s, graded) for s, _, graded, _ in rows] == [("4711", True), ("4712", True), ("4713", False)]
    assert "2 candidate files" in rows[2][3]


def test_one_students_own_zip_is_their_folder(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    _zip(folder / "ex01_erin.zip", {"work/ex01.py": GOOD, "work/notes.md": "notes"})
    assert _rows(folder, tmp_path) == [("ex01_erin", "ex01_erin.zip: ex01.py", True, "")]


def test_a_pattern_names_the_student(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "hw1-s1234567-final.py").write_text(GOOD)
    assert _rows(folder, tmp_path, r"-(?P<student>s\d+)-")[0][0] == "s1234567"
    with pytest.raises(ValueError, match="group"):
        check_pattern(r"s\d+")
    with pytest.raises(ValueError, match="not a regular expression"):
        check_pattern(r"(?P<student>")


def test_hostile_archives_cannot_write_outside_or_make_links_or_explode(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    _zip(folder / "ex01_evil.zip", {"../../escaped.py": GOOD})
    _zip(folder / "ex01_abs.zip", {"/abs/ex01.py": GOOD})
    with zipfile.ZipFile(folder / "links.zip", "w") as z:
        info = zipfile.ZipInfo("ex01_link.py")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    with zipfile.ZipFile(folder / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("ex01.py", b"\0" * (MAX_UNPACKED + 1))
    (folder / "broken.zip").write_bytes(b"PK\x03\x04 not a zip")
    work = tmp_path / "work"
    work.mkdir()
    entries = collect(str(folder), str(work))
    rows = {e.name: (bool(e.path), e.problem) for e in entries}
    assert not (tmp_path / "escaped.py").exists() and not os.path.exists("/abs/ex01.py")
    assert all(os.path.realpath(e.path).startswith(str(work) + os.sep) for e in entries if e.path)
    graded = sorted(n for n, (ok, _) in rows.items() if ok)
    assert graded == ["ex01_abs.zip: ex01.py", "ex01_evil.zip: escaped.py"]
    assert "empty zip" in rows["links.zip"][1]                      # the link was never created
    assert "unpacks to" in rows["bomb.zip"][1] or "zip bomb" in rows["bomb.zip"][1]
    assert "cannot be opened safely" in rows["broken.zip"][1]


def test_student_ids_from_names():
    assert student_of("smithjohn_12345_67890_ex01.py") == "12345"
    assert student_of("Jane Doe_4711_assignsubmission_file_") == "4711"
    assert student_of("ex01_alice.ipynb") == "ex01_alice"
