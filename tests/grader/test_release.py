"""grader/release.py: `python -m specdec.grade release DIR` writes what learners get, and no solution."""

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from grader.release import release
from helpers import ROOT, SUBS, cli


@pytest.mark.slow
def test_release_writes_statements_stubs_and_notebooks_but_no_solution(capsys, tmp_path):
    code, out, _ = cli(capsys, "release", str(tmp_path / "out"))
    written = [str(p) for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert code == 0 and f"released {len(written)} files" in out
    names = sorted(os.path.relpath(p, tmp_path / "out") for p in written)
    assert "ex01_verify/ex01_verify.ipynb" in names and "ex05_speedup/README.md" in names
    assert not any("solution" in n for n in names)
    for path in written:
        assert "### BEGIN SOLUTION" not in open(path).read()
    with pytest.raises(ValueError, match="not empty"):
        release(str(tmp_path / "out"))


# ---- the learners' checker: installs with one command, holds no answer key ------------------------------------------
def _solution_lines():
    """Every line inside a solution block of every exercises/*/solution.py (long enough to mean something), but
    those the statements show on purpose (ex06's README gives the draw `u = rng.random() * sum(row)`)."""
    lines, shown = set(), ""
    for folder in sorted(os.listdir(os.path.join(ROOT, "exercises"))):
        path = os.path.join(ROOT, "exercises", folder, "solution.py")
        if not os.path.exists(path):
            continue
        shown += open(os.path.join(ROOT, "exercises", folder, "README.md"), encoding="utf-8").read()
        inside = False
        for line in open(path, encoding="utf-8"):
            text = line.strip()
            if text in ("### BEGIN SOLUTION", "### END SOLUTION"):
                inside = text.startswith("### BEGIN")
            elif inside and len(text) >= 16 and not text.startswith("#"):
                lines.add(text)
    return {line for line in lines if line not in shown}


def _handout_texts(folder):
    """(name, text) of every file under `folder`, the members of any archive in it included."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                for member in z.namelist():
                    yield f"{path}:{member}", z.read(member).decode("utf-8", "replace")
        else:
            yield str(path), data.decode("utf-8", "replace")


def _checker(site, *args, cwd):
    """Run the installed checker with nothing but the standard library and itself on the path (python -S)."""
    code = ("import runpy, sys; sys.path.insert(0, %r); sys.argv = ['checker'] + %r; "
            "runpy.run_module('grader.practice', run_name='__main__')") % (str(site), list(args))
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.slow
def test_the_handout_checker_installs_with_one_command_and_holds_no_solution(tmp_path):
    out, site = tmp_path / "handout", tmp_path / "site"
    release(str(out))
    answers = _solution_lines()
    assert len(answers) > 40                                        # the grep below has something to find
    leaks = [(name, line) for name, text in _handout_texts(out) for line in answers if line in text]
    assert leaks == []
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                              str(out / "checker")], capture_output=True, text=True, timeout=300)   # as a learner does
    assert install.returncode == 0, install.stderr
    leaks = [(name, line) for name, text in _handout_texts(site) for line in answers if line in text]
    assert leaks == [] and not (site / "specdec").exists() and not (site / "exercises").exists()

    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(os.path.join(ROOT, "exercises", "ex01_verify", "solution.py"), work / "ex01_mine.py")
    shutil.copy(os.path.join(SUBS, "ex01", "wrong_no_stop.py"), work / "ex01_wrong.py")
    right = _checker(site, "ex01_mine.py", cwd=work)
    assert right.returncode == 0 and "score: 100/100" in right.stdout, right.stdout + right.stderr
    wrong = _checker(site, "ex01_wrong.py", cwd=work)
    assert wrong.returncode == 1 and "Most likely cause: verification goes on after the first rejection" in wrong.stdout
    sampler = _checker(site, str(out / "ex04_sampler" / "ex04_sampler.py"), cwd=work)   # the stub: not written yet
    assert sampler.returncode == 1 and "checked by the instructor's grader only" in sampler.stdout


@pytest.mark.slow
def test_release_of_one_exercise_and_release_help(tmp_path):
    code = subprocess.run([sys.executable, "-m", "specdec.grade", "release", "--help"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60)
    assert code.returncode == 0 and "--exercise" in code.stdout and os.listdir(tmp_path) == []
    written = release(str(tmp_path / "one"), exercises=["ex01"])
    folders = sorted(p.name for p in (tmp_path / "one").iterdir() if p.is_dir())
    assert folders == ["checker", "ex01_verify"] and len(written) > 10
    index = (tmp_path / "one" / "README.md").read_text()
    assert "pip install ./checker" in index and "ex01" in index and "ex02" not in index


def _commands(out):
    """(folder it is run in, command) for every `python -m ...` a learner reads in the handout: in its READMEs (the
    index, run at the handout's top; a statement, in its exercise's folder) and its notebooks' markdown."""
    found = set()
    for path in sorted(out.rglob("*")):
        if path.suffix == ".md":
            texts = [path.read_text(encoding="utf-8")]
        elif path.suffix == ".ipynb":
            cells = json.loads(path.read_text())["cells"]
            texts = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
        else:
            continue
        for text in texts:
            for command in re.findall(r"(?m)(?:^|`)(python -m [^`\n]+)", text):
                found.add((path.parent, command.strip()))
    return found


@pytest.mark.slow
def test_every_command_the_handout_prints_runs_in_the_handout(tmp_path):
    """Issue 25: every statement told students to run `python -m specdec.grade exercises/...`, which a handout has
    neither the package nor the folders for."""
    out, site = tmp_path / "handout", tmp_path / "site"
    release(str(out))
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                              str(out / "checker")], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    commands = _commands(out)
    modules = {c.split()[2] for _, c in commands}
    assert modules == {"grader.practice", "pip"}, modules               # one self-check command, and the install
    ran = 0
    for folder, command in sorted(commands):
        words = command.split()
        if words[2] != "grader.practice":
            continue
        result = _checker(site, *words[3:], cwd=folder)
        shown = result.stdout + result.stderr
        assert result.returncode in (0, 1), (folder, command, shown[-500:])   # 1: the stub's cases fail
        assert "No module named" not in shown and "python -m specdec" not in shown, (command, shown[-500:])
        ran += 1
    assert ran >= 12                                                    # each statement and each notebook
