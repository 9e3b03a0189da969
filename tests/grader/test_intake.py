"""Every upload as untrusted bytes (grader/intake.py): ids from the LMS's names of the uploads, bounds per upload
and per batch, no link followed, and one graded file per upload and exercise.

References: folders and zip files built here by hand, in the layouts Canvas and Moodle download (Canvas:
`lastnamefirstname[_LATE]_<user id>_<attachment id>_<file>`; Moodle: one folder per student,
`<Full Name>_<participant id>_assignsubmission_file_`; Gradescope's export: `submission_<id>/` folders beside
`submission_metadata.yml`), and hostile uploads of each class the red teams used (a zip planting a classmate's
rows, nested zips each under its own bounds, thousands of files in one upload, links, FIFOs, path traversal,
a bomb, names that differ in one byte that is not UTF-8). What each must give is worked out by hand below.
"""

import io
import os
import random
import stat
import zipfile

import pytest

from grader import batch, cli, intake

GOOD = "def verify_speculative_tokens(d, q, p, u):\n    return {}\n"


def _zip_bytes(members):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def _uploads(source, tmp_path, pattern=None):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return intake.read_batch(str(source), str(work), pattern)


def _by_name(uploads):
    return {u.name: u for u in uploads}


def test_files_folders_and_other_entries_each_become_an_upload(tmp_path):
    folder = tmp_path / "class"
    (folder / "bob").mkdir(parents=True)
    (folder / "ex01_alice.py").write_text(GOOD)
    (folder / "bob" / "ex01.ipynb").write_text("{}")
    (folder / "carol").mkdir()                                   # an empty folder
    (folder / "notes.txt").write_text("hi")
    (folder / ".hidden.py").write_text(GOOD)                     # hidden: not a learner's entry
    os.symlink(folder / "ex01_alice.py", folder / "ex01_link.py")
    os.mkfifo(folder / "ex01_fifo.py")
    uploads = _by_name(_uploads(folder, tmp_path))
    assert sorted(uploads) == ["bob", "carol", "ex01_alice.py", "ex01_fifo.py", "ex01_link.py", "notes.txt"]
    assert [f.name for f in uploads["ex01_alice.py"].files] == ["ex01_alice.py"]
    assert uploads["ex01_alice.py"].student == "ex01_alice" and uploads["bob"].student == "bob"
    assert [f.name for f in uploads["bob"].files] == ["ex01.ipynb"]
    assert "nothing to grade" in uploads["carol"].problem
    assert "not a .py or .ipynb file (.txt)" in uploads["notes.txt"].problem
    assert "symbolic link" in uploads["ex01_link.py"].problem and "FIFO" in uploads["ex01_fifo.py"].problem
    for u in uploads.values():   # every copy is in the private folder, under a fresh name
        assert all(os.path.dirname(os.path.dirname(f.path)) == str(tmp_path / "work") for f in u.files)


def test_a_canvas_download_graded_as_the_batch_gives_user_ids_names_and_the_late_mark(tmp_path):
    download = tmp_path / "submissions.zip"
    download.write_bytes(_zip_bytes({"smithjohn_12345_67890_ex01_verify.py": GOOD,
                                     "doejane_LATE_23456_78901_ex01_verify-1.ipynb": "{}",
                                     "leenick_34567_89012_readme.txt": "no code"}))
    uploads = sorted(_uploads(download, tmp_path), key=lambda u: u.student)
    assert [(u.student, u.person, u.lms, u.late, bool(u.files)) for u in uploads] == [
        ("12345", "smithjohn", "canvas", False, True), ("23456", "doejane", "canvas", True, True),
        ("34567", "leenick", "canvas", False, False)]
    assert uploads[0].order == (67890,)


def test_a_moodle_download_gives_participant_ids_and_full_names(tmp_path):
    download = tmp_path / "moodle.zip"
    download.write_bytes(_zip_bytes({"Jane Doe_4711_assignsubmission_file_/ex01.py": GOOD,
                                     "John Roe_4712_assignsubmission_file_/ex01_verify.ipynb": "{}",
                                     "Ann Poe_4713_assignsubmission_file_/a.py": GOOD,
                                     "Ann Poe_4713_assignsubmission_file_/ex01_b.py": GOOD}))
    uploads = {u.student: u for u in _uploads(download, tmp_path)}
    assert {s: (u.person, u.lms) for s, u in uploads.items()} == {
        "4711": ("Jane Doe", "moodle"), "4712": ("John Roe", "moodle"), "4713": ("Ann Poe", "moodle")}
    graded, rest = intake.choose(uploads["4713"], "ex01")["ex01"]
    assert graded.name == "ex01_b.py" and [r.name for r in rest] == ["a.py"]   # the one named like the exercise


@pytest.mark.parametrize("inside_a_download", [False, True])
def test_names_inside_an_upload_never_give_it_to_another_student(tmp_path, inside_a_download):
    """The red team's zip: one student's upload whose members are named like a classmate's Canvas entries."""
    planted = _zip_bytes({"victim_12345_67890_ex01.py": GOOD, "other_23456_78901_ex01.py": GOOD})
    entries = {"evil_99999_11111_hw.zip": planted, "victim_12345_67890_ex01.py": "syntax error("}
    if inside_a_download:
        source = tmp_path / "submissions.zip"
        source.write_bytes(_zip_bytes(entries))
    else:
        source = tmp_path / "class"
        source.mkdir()
        for name, data in entries.items():
            (source / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    uploads = {u.name: u for u in _uploads(source, tmp_path)}
    assert sorted(u.student for u in uploads.values()) == ["12345", "99999"]
    evil = uploads["evil_99999_11111_hw.zip"]
    assert evil.student == "99999" and len(evil.files) == 2
    rows = batch.plan(list(uploads.values()), "ex01")
    assert [(r.student, len(r.graded)) for r in rows] == [("12345", 1), ("99999", 1)]   # one graded file each
    victim = next(r for r in rows if r.student == "12345")
    assert victim.graded[0][1].name == "victim_12345_67890_ex01.py"                    # the victim's own file


def test_a_zip_in_a_class_folder_is_one_students_upload_whatever_it_holds(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ex01_erin.zip").write_bytes(_zip_bytes({"work/ex01.py": GOOD, "work/notes.md": "notes"}))
    [erin] = _uploads(folder, tmp_path)
    assert (erin.student, [f.name for f in erin.files]) == ("ex01_erin", ["ex01_erin.zip: work/ex01.py"])
    assert erin.others == [("ex01_erin.zip: work/notes.md", "not a .py or .ipynb file (.md): not graded")]


def test_nested_zips_share_one_uploads_bounds(tmp_path, monkeypatch):
    """Each zip under the old per-zip bounds, the upload as a whole over them: refused, saying why."""
    monkeypatch.setattr(intake, "MAX_UPLOAD_BYTES", 64 * 1024)
    noise = random.Random(5).randbytes   # incompressible: each member well under the ratio bound
    inner = _zip_bytes({f"pad{i}.py": noise(20_000) for i in range(3)})          # 60 KB unpacked, under 64 KB
    outer = _zip_bytes({f"part{i}.zip": inner for i in range(3)})                  # 180 KB in all, over
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ex01_bomb.zip").write_bytes(outer)
    [upload] = _uploads(folder, tmp_path)
    assert upload.problem.startswith("not graded: it unpacks to more than") and upload.files == []


def test_the_batch_has_bounds_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr(intake, "MAX_BATCH_BYTES", 50_000)
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"ex01_{name}.py").write_text("#" * 20_000)
    uploads = _by_name(_uploads(folder, tmp_path))
    assert uploads["ex01_a.py"].files and uploads["ex01_b.py"].files
    assert "the batch unpacks to more than" in uploads["ex01_c.py"].problem


def test_thousands_of_files_in_one_upload_give_one_graded_file_and_a_row_that_says_so(tmp_path):
    """The red team's 314 KB upload that became 2,000 graded entries under 2,000 ids."""
    members = {f"student{i}_{10000 + i}_{20000 + i}_ex01.py": GOOD for i in range(2000)}
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ex01_mallory.zip").write_bytes(_zip_bytes(members))
    [upload] = _uploads(folder, tmp_path)
    assert upload.student == "ex01_mallory" and "more than the 500 an upload may hold" in upload.problem
    rows = batch.plan([upload], "ex01")
    assert [(r.student, len(r.graded)) for r in rows] == [("ex01_mallory", 0)]


def test_an_uploads_many_files_give_at_most_one_graded_file_per_exercise(tmp_path):
    folder = tmp_path / "class" / "frank"
    folder.mkdir(parents=True)
    for name in ("scratch.py", "ex01_verify.py", "ex01_old.py", "ex03_residual.py"):
        (folder / name).write_text(GOOD)
    os.utime(folder / "ex01_old.py", (1, 1))
    [upload] = _uploads(folder.parent, tmp_path)
    chosen = intake.choose(upload)
    assert sorted(k for k in chosen if k) == ["ex01", "ex03"] and chosen["ex01"][0].name == "ex01_verify.py"
    [row01, row03] = [r for r in batch.plan([upload]) if r.exercise]
    assert (row01.exercise, len(row01.graded), row03.exercise) == ("ex01", 1, "ex03")
    assert any("ex01_old.py: another file of the same upload" in line for line in row01.files)
    assert any("scratch.py: cannot tell its exercise" in line for line in row01.files)


def test_hostile_archives_cannot_write_outside_or_make_links_or_explode(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ex01_evil.zip").write_bytes(_zip_bytes({"../../escaped.py": GOOD}))
    (folder / "ex01_abs.zip").write_bytes(_zip_bytes({"/abs/ex01.py": GOOD}))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        info = zipfile.ZipInfo("ex01_link.py")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    (folder / "ex01_links.zip").write_bytes(out.getvalue())
    (folder / "ex01_bomb.zip").write_bytes(_zip_bytes({"ex01.py": b"\0" * (intake.MAX_UPLOAD_BYTES + 1)}))
    (folder / "ex01_broken.zip").write_bytes(b"PK\x03\x04 not a zip")
    uploads = _by_name(_uploads(folder, tmp_path))
    assert not (tmp_path / "escaped.py").exists() and not os.path.exists("/abs/ex01.py")
    assert [f.name for f in uploads["ex01_evil.zip"].files] == ["ex01_evil.zip: escaped.py"]
    assert [f.name for f in uploads["ex01_abs.zip"].files] == ["ex01_abs.zip: abs/ex01.py"]
    assert "symbolic link" in uploads["ex01_links.zip"].problem                 # the link was never created
    assert "zip bomb" in uploads["ex01_bomb.zip"].problem or "unpacks to more" in uploads["ex01_bomb.zip"].problem
    assert "cannot be opened" in uploads["ex01_broken.zip"].problem


def test_a_link_inside_a_folder_is_refused_even_when_it_points_inside(tmp_path):
    folder = tmp_path / "class" / "gina"
    folder.mkdir(parents=True)
    (folder / "real.txt").write_text(GOOD)
    os.symlink("real.txt", folder / "ex01.py")                                 # inside the upload
    os.symlink("/nonexistent/ex01.py", folder / "ex01_dangling.py")            # dangling
    os.symlink(os.path.abspath(__file__), folder / "ex01_outside.py")          # outside it
    [upload] = _uploads(folder.parent, tmp_path)
    assert upload.files == [] and sorted(n for n, why in upload.others if "symbolic link" in why) == [
        "ex01.py", "ex01_dangling.py", "ex01_outside.py"]


def test_names_that_differ_in_one_byte_are_two_students(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    for raw in (b"ex01_\xff.py", b"ex01_\xfe.py"):
        with open(os.path.join(os.fsencode(folder), raw), "w") as f:
            f.write(GOOD)
    uploads = _uploads(folder, tmp_path)
    assert sorted(u.student for u in uploads) == ["ex01_\\xfe", "ex01_\\xff"]
    assert len(batch.plan(uploads, "ex01")) == 2


def test_a_gradescope_export_takes_names_and_times_from_its_metadata(tmp_path):
    export = tmp_path / "export"
    (export / "submission_101").mkdir(parents=True)
    (export / "submission_102").mkdir()
    (export / "submission_101" / "ex01.py").write_text(GOOD)
    (export / "submission_102" / "mine.ipynb").write_text("{}")
    (export / "submission_metadata.yml").write_text(
        "submission_101:\n  :submitters:\n  - :name: Jane Doe\n    :sid: '12345'\n    :email: jane@x.edu\n"
        "  :created_at: 2026-11-01 10:00:00.000000000 -07:00\n  :score: 90.0\n"
        "submission_102:\n  :submitters:\n  - :name: John Roe\n    :email: john@x.edu\n"
        "  :created_at: 2026-11-02 10:00:00.000000000 -07:00\n")
    uploads = {u.student: u for u in _uploads(export, tmp_path)}
    assert {s: u.person for s, u in uploads.items()} == {"12345": "Jane Doe", "john@x.edu": "John Roe"}
    assert uploads["john@x.edu"].submitted - uploads["12345"].submitted == 86400
    assert (uploads["12345"].score, uploads["john@x.edu"].score) == ("90.0", "")


def test_a_pattern_names_the_student():
    assert intake.identity("hw1-s1234567-final.py", r"-(?P<student>s\d+)-")[0] == "s1234567"
    with pytest.raises(ValueError, match="group"):
        cli.check_pattern(r"s\d+")
    with pytest.raises(ValueError, match="not a regular expression"):
        cli.check_pattern(r"(?P<student>")


def test_one_path_is_one_upload_and_a_link_is_refused(tmp_path):
    (tmp_path / "ex01_mine.py").write_text(GOOD)
    os.symlink(tmp_path / "ex01_mine.py", tmp_path / "ex01_link.py")
    work = tmp_path / "work"
    mine = intake.read_path(str(tmp_path / "ex01_mine.py"), str(work))
    link = intake.read_path(str(tmp_path / "ex01_link.py"), str(work))
    assert [f.name for f in mine.files] == ["ex01_mine.py"] and open(mine.files[0].path).read() == GOOD
    assert link.files == [] and "symbolic link" in link.problem


def test_one_id_for_two_plain_uploads_is_a_collision_row_not_a_merge(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.py").write_text(GOOD)
    (folder / "alice.ipynb").write_text("{}")
    [row] = batch.plan(_uploads(folder, tmp_path), "ex01")
    assert row.graded == [] and "2 uploads have the id alice" in row.problem
