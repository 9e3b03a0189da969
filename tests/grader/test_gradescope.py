"""Gradescope (grader/gradescope.py): the autograder zip, run as Gradescope runs it, with and without bubblewrap.

Each run unpacks the zip into a folder of its own, mounted at /autograder in a bubblewrap mount namespace
(the layout Gradescope's specification gives: source/, submission/, results/), and runs run_autograder there
as root, as Gradescope does, with no checkout of the course on any path: the `python3` it finds is this
interpreter without its site-packages' start-up files (`-S`: the editable install of the checkout is never
found), given only the third-party packages Gradescope's setup.sh installs. So the zip grades alone, or fails
here as it would on Gradescope (once, `grader/inprocess.py` was missing from it and every upload scored 0 while
these tests passed). "Without bubblewrap" hides /usr/bin/bwrap inside that namespace (Gradescope's
container may refuse the namespaces bubblewrap needs): the grader then runs each submission as a fresh
unprivileged user. Every results.json is validated against the JSON Schema written from Gradescope's
documented format (`gradescope.RESULTS_SCHEMA`, https://gradescope-autograders.readthedocs.io/en/latest/specs/).
"""

import json
import os
import shutil
import subprocess
import sys
import zipfile

import jsonschema
import pytest

from grader import gradebook
from grader.gradescope import RESULTS_SCHEMA
from helpers import NEEDS_BWRAP, ROOT, SUBS

SEED = 918273645
pytestmark = [pytest.mark.slow, NEEDS_BWRAP,
              pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs run_autograder as root; so must this")]


def build(tmp_path_factory, exercise):
    out = tmp_path_factory.mktemp("gs") / f"autograder-{exercise}.zip"
    result = subprocess.run([sys.executable, "-m", "specdec.grade", "gradescope", "--exercise", exercise, "--seed",
                             str(SEED), "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert str(SEED) not in result.stdout and gradebook.seed_fingerprint(SEED) in result.stdout
    return out


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    return build(tmp_path_factory, "ex01")


def run(autograder, tmp_path, files, with_bwrap, expect_failure=False, drop=()):
    """results.json after run_autograder graded `files` ({name: text, or a function of the submission folder that
    makes the entry}) in a fresh /autograder (less the kit's files `drop`), with "_stdout": what it printed."""
    home = tmp_path / "autograder"
    for d in ("source", "submission", "results"):
        (home / d).mkdir(parents=True)
    with zipfile.ZipFile(autograder) as z:
        z.extractall(home / "source")
    for info in zipfile.ZipFile(autograder).infolist():   # extractall drops the modes the zip carries
        os.chmod(home / "source" / info.filename, (info.external_attr >> 16) & 0o777 or 0o644)
    shutil.copy(home / "source" / "run_autograder", home / "run_autograder")
    for name in drop:
        os.unlink(home / "source" / name)
    for name, text in files.items():
        if callable(text):
            text(home / "submission" / name)
        else:
            (home / "submission" / name).write_text(text)
    os.makedirs("/autograder", exist_ok=True)               # bwrap's mount point (an empty folder)
    argv = ["bwrap", "--dev-bind", "/", "/"]
    if sys.base_prefix.startswith("/root/"):   # this interpreter lives under /root (0700); Gradescope's is the system's
        argv += ["--tmpfs", "/root"]
        parts = sys.base_prefix.split("/")[2:-1]
        for i in range(len(parts)):
            argv += ["--perms", "0755", "--dir", "/root/" + "/".join(parts[:i + 1])]
        argv += ["--ro-bind", sys.base_prefix, sys.base_prefix]
    argv += ["--bind", str(home), "/autograder", "--setenv", "PATH", f"{_bare_python(tmp_path)}:/usr/bin:/bin"]
    if not with_bwrap:
        argv += ["--ro-bind", "/dev/null", shutil.which("bwrap")]
    result = subprocess.run(argv + ["/autograder/run_autograder"], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    document = json.loads((home / "results" / "results.json").read_text())
    jsonschema.validate(document, RESULTS_SCHEMA)
    failed = "autograder_error" in document.get("extra_data", {})
    assert failed == ("AUTOGRADER ERROR" in result.stdout), result.stdout
    if not expect_failure:
        assert not failed, result.stdout
    text = json.dumps(document)
    assert str(SEED) not in text and "/autograder/source" not in text
    document["_stdout"] = result.stdout   # what Gradescope shows the instructor, beside results.json
    return document


def _bare_python(tmp_path):
    """A folder holding `python3`: a virtual environment of this interpreter without the course, whose one .pth file
    puts this environment's site-packages folder on its path (NumPy, IPython, tqdm: what setup.sh installs) but
    not the checkout (its editable install is a .pth file of that folder, which Python reads only in a folder it
    makes a site directory: so no process of the autograder, the grading process it starts included, can import
    the checkout's grader)."""
    import sysconfig
    import venv
    folder = tmp_path.parent / "bare-python"
    if not (folder / "bin" / "python3").exists():
        venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
        site = subprocess.run([str(folder / "bin" / "python3"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                               "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip()
        with open(os.path.join(site, "course-dependencies.pth"), "w") as f:
            f.write(sysconfig.get_paths()["purelib"] + "\n")
    return folder / "bin"


def test_the_zip_has_setup_and_run_autograder_at_its_root(autograder):
    with zipfile.ZipFile(autograder) as z:
        names = {i.filename: i for i in z.infolist()}
    assert {"setup.sh", "run_autograder", "config.json"} <= set(names)
    assert all((names[n].external_attr >> 16) & 0o111 for n in ("setup.sh", "run_autograder"))
    assert "apt-get install" in zipfile.ZipFile(autograder).read("setup.sh").decode() and \
        "bubblewrap" in zipfile.ZipFile(autograder).read("setup.sh").decode()
    assert "python3" in zipfile.ZipFile(autograder).read("run_autograder").decode()


@pytest.mark.parametrize("with_bwrap", [True, False], ids=["bwrap", "no-bwrap"])
def test_honest_wrong_and_hostile_submissions(autograder, tmp_path, with_bwrap):
    read = lambda *p: open(os.path.join(SUBS, *p), encoding="utf-8").read()
    honest = run(autograder, tmp_path / "honest", {"my_solution.py": read("ex01", "good_plain.py")}, with_bwrap)
    assert honest["score"] == 110 and all(t["status"] == "passed" for t in honest["tests"])
    assert ("bubblewrap sandbox" if with_bwrap else "fresh unprivileged user") in honest["output"]
    hidden = [t for t in honest["tests"] if t["name"].endswith("(hidden)")]
    assert hidden and all(t["visibility"] == "after_published" for t in hidden)
    assert all(t["visibility"] == "visible" for t in honest["tests"] if t not in hidden)
    assert honest["stdout_visibility"] == "hidden" and honest["extra_data"]["seed_fingerprint"] == \
        gradebook.seed_fingerprint(SEED)

    wrong = run(autograder, tmp_path / "wrong", {"ex01.py": read("ex01", "wrong_no_stop.py")}, with_bwrap)
    assert 0 < wrong["score"] < 100 and "after the first rejection" in wrong["output"]
    assert {t["name"] for t in wrong["tests"] if t["status"] == "failed"}

    forger = run(autograder, tmp_path / "forger", {"ex01.py": read("ex01", "hostile_results_forge.py")}, with_bwrap)
    assert forger["score"] < 20 and "forged" not in json.dumps(forger)

    spy = run(autograder, tmp_path / "spy", {"ex01.py": read("ex01", "hostile_source_spy.py")}, with_bwrap)
    messages = " ".join(t["output"] for t in spy["tests"])
    assert spy["score"] == 0 and "found:" in messages
    assert "exercise" not in messages.split("found:")[1] and "grader" not in messages.split("found:")[1]


def test_the_zip_ships_only_what_grading_the_exercise_needs(autograder):
    names = set(zipfile.ZipFile(autograder).namelist())
    assert {"exercises/ex01_verify/grading.py", "grader/worker.py", "specdec/verify.py"} <= names
    assert not [n for n in names if n.endswith("solution.py") or n.startswith(("exercises/ex02", "exercises/ex03",
                                                                              "exercises/ex04", "exercises/ex05",
                                                                              "exercises/ex06"))]
    assert not [n for n in names if not n.endswith(".py") and n not in ("setup.sh", "run_autograder", "config.json")]


def _link(target):
    return lambda path: os.symlink(target, path)


def test_every_upload_gets_a_valid_results_json_and_no_link_is_followed(autograder, tmp_path):
    """Uploads from GitHub, GitLab or a zip carry links: the red team's link to the kit's own reference scored 110
    with no code, a dangling one ended in a traceback and no results.json, one to a root-only file of the kit put
    a line of it into the student's output. Each now gets a results.json of 0 that says why (`run` validates it)."""
    reference = run(autograder, tmp_path / "ref", {"ex01.py": _link("/autograder/source/specdec/verify.py")}, True)
    assert reference["score"] == 0 and "symbolic link" in reference["output"]
    dangling = run(autograder, tmp_path / "dangling", {"ex01.py": _link("/nonexistent/ex01.py")}, True)
    assert dangling["score"] == 0 and "symbolic link" in dangling["output"]
    secret = run(autograder, tmp_path / "secret", {"ex01.py": _link("/autograder/source/config.json")}, True)
    assert secret["score"] == 0 and "seed" not in json.dumps(secret)

    def folder(path):
        path.mkdir()
        (path / "work.py").write_text(open(os.path.join(SUBS, "ex01", "good_plain.py")).read())
    nested = run(autograder, tmp_path / "folder", {"project.py": folder}, True)
    assert nested["score"] == 110 and "graded: project.py/work.py" in nested["output"]
    binary = run(autograder, tmp_path / "binary", {"ex01.py": lambda p: p.write_bytes(os.urandom(4096))}, True)
    assert binary["score"] == 0 and "cannot grade" in binary["output"]
    empty = run(autograder, tmp_path / "emptyfile", {"ex01.py": ""}, True)
    assert empty["score"] == 0 and "defines no function" in empty["output"]


def test_no_file_gives_a_clear_zero_and_of_several_the_rule_picks_one(autograder, tmp_path):
    empty = run(autograder, tmp_path / "empty", {"notes.txt": "nothing"}, True)
    assert empty["score"] == 0 and "No .py or .ipynb file" in empty["output"]
    good = open(os.path.join(SUBS, "ex01", "good_plain.py")).read()
    two = run(autograder, tmp_path / "two", {"scratch.py": "x = 1\n", "ex01_verify.py": good}, True)
    assert two["score"] == 110 and "graded: ex01_verify.py (of 2 files" in two["output"] and "scratch.py" in \
        two["output"]


def test_a_failure_of_the_autograder_itself_is_told_to_the_instructor_as_well(tmp_path, monkeypatch, capsys):
    """The student's results.json says the autograder failed; the autograder's output (hidden from students) says
    what failed, so the instructor can act on it (it was once swallowed whole)."""
    from grader import gradescope

    def broken(home, started):
        raise RuntimeError("config.json has no key 'exercise'")
    monkeypatch.setattr(gradescope, "_grade", broken)
    (tmp_path / "source").mkdir()
    assert gradescope.run(str(tmp_path)) == 0
    results = json.load(open(tmp_path / "results" / "results.json"))
    assert results["score"] == 0 and "autograder itself failed (RuntimeError)" in results["output"]
    assert "no key 'exercise'" not in results["output"]
    assert "no key 'exercise'" in results["extra_data"]["autograder_error"]
    assert "RuntimeError: config.json has no key 'exercise'" in capsys.readouterr().out


@pytest.mark.parametrize("exercise", ["ex04", "ex06"])
def test_each_exercises_zip_grades_alone(tmp_path_factory, tmp_path, exercise):
    """The zips of the statistically graded exercises, unpacked alone: the course's solution gets full marks and a
    catalogued mistake its diagnosis, in both isolations."""
    from grader.registry import FOLDERS, ROOT as KIT
    zipped = build(tmp_path_factory, exercise)
    solution = open(os.path.join(KIT, "exercises", FOLDERS[exercise], "solution.py"), encoding="utf-8").read()
    wrong = sorted(f for f in os.listdir(os.path.join(SUBS, exercise)) if f.startswith("wrong_"))[0]
    for with_bwrap in (True, False):
        right = run(zipped, tmp_path / f"right-{with_bwrap}", {f"{exercise}.py": solution}, with_bwrap)
        assert right["score"] == 100 and all(t["status"] == "passed" for t in right["tests"]), right["output"]
        bad = run(zipped, tmp_path / f"wrong-{with_bwrap}",
                  {f"{exercise}.py": open(os.path.join(SUBS, exercise, wrong), encoding="utf-8").read()}, with_bwrap)
        assert bad["score"] < 100


def test_a_zip_missing_a_module_says_so_to_the_instructor_and_nothing_false_to_the_student(autograder, tmp_path):
    """A kit that cannot grade (here: one module of the engine taken out of the unpacked zip) answers every upload
    with a results.json that the student reads as the autograder's failure, not theirs, and the instructor finds
    the error where Gradescope shows it to them: the autograder's output and results.json's extra_data."""
    good = open(os.path.join(SUBS, "ex01", "good_plain.py"), encoding="utf-8").read()
    broken = run(autograder, tmp_path, {"ex01.py": good}, True, expect_failure=True, drop=["grader/inprocess.py"])
    assert broken["score"] == 0 and "autograder itself failed (ModuleNotFoundError)" in broken["output"]
    assert "not your code" in broken["output"] and "autograder output" in broken["output"]
    assert "grader.inprocess" in broken["extra_data"]["autograder_error"]
    assert "grader.inprocess" in broken["_stdout"] and "Traceback" in broken["_stdout"]
    assert "grader.inprocess" not in broken["output"] and "/autograder/source" not in broken["output"]
