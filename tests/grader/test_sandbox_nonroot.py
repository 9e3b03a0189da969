"""The sandbox as an ordinary user runs it: bwrap makes the user namespace itself (`--unshare-user`).

Run as root, the grader takes another path (bwrap keeps two capabilities, the worker drops
root and unshares a user namespace of its own), so the rest of the suite on a root CI
machine never exercises this one. Here the grader runs as uid 65534 (nobody, via setpriv)
with an interpreter that user can read, on two files: an honest submission must get its
full grade in a bwrap sandbox (no fallback), and a probe must find itself uid 1000 in a
filesystem without the course's checkout. Run as a non-root user, the same command runs
directly. Skips, saying why, where this cannot run.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from helpers import ROOT

NOBODY = 65534
PROBE = f'''import os


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    raise RuntimeError(f"uid {{os.getuid()}} gid {{os.getgid()}} "
                       f"checkout {{os.path.exists({os.path.join(ROOT, 'specdec')!r})}}")
'''

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("bwrap") is None,
                                 reason="bubblewrap (bwrap) is Linux-only and must be installed")]


def as_user(argv):
    """argv as uid 65534 when we are root (else as ourselves), with a clean environment and PYTHONPATH=ROOT."""
    env = ["env", "-i", "PATH=/usr/bin:/bin", f"PYTHONPATH={ROOT}"]
    if os.geteuid() != 0:
        return env + argv
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] + env + argv


def interpreter():
    """A Python >= 3.10 that the user can run and that imports this checkout's grader, or None."""
    for python in dict.fromkeys([os.path.realpath(sys.executable), "/usr/bin/python3"]):
        check = as_user([python, "-c", "import os, sys, grader; assert sys.version_info >= (3, 10) "
                                       "and os.geteuid() != 0"])
        if os.path.exists(python) and subprocess.run(check, capture_output=True, timeout=60).returncode == 0:
            return python
    return None


def test_an_unprivileged_user_grades_in_a_bwrap_sandbox_of_its_own():
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv (util-linux): cannot become uid 65534")
    python = interpreter()
    if python is None:
        pytest.skip(f"no Python >= 3.10 that uid {NOBODY} can run with this checkout ({ROOT}) importable")
    folder = tempfile.mkdtemp(prefix="specdec-nonroot-")
    try:
        os.chmod(folder, 0o755)
        probe = os.path.join(folder, "ex01_probe.py")
        with open(probe, "w") as f:
            f.write(PROBE)
        os.chmod(probe, 0o644)
        docs = {}
        for path in (os.path.join(ROOT, "tests", "submissions", "ex01", "good_plain.py"), probe):
            run = subprocess.run(as_user([python, "-m", "specdec.grade", path, "--exercise", "ex01", "--json",
                                          "--sandbox", "bwrap"]), capture_output=True, text=True, timeout=120)
            if run.returncode == 2 and "--sandbox bwrap:" in run.stderr:
                pytest.skip(f"bwrap cannot sandbox as uid {NOBODY} here: {run.stderr.strip()[-200:]}")
            docs[os.path.basename(path)] = json.loads(run.stdout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    good, probe = docs["good_plain.py"], docs["ex01_probe.py"]
    assert (good["sandbox"], good["score"], good["bonus"], good["plain_python"]) == ("bwrap", 100, 10, True)
    assert probe["sandbox"] == "bwrap" and probe["score"] == 0
    assert all("raised RuntimeError: uid 1000 gid 1000 checkout False" in c["message"] for c in probe["cases"]
               if not c["hidden"])
