"""grader/sandbox.py and grader/mounts.py: the sandbox boundary itself.

Inside bwrap a submission sees only itself and the interpreter (no course checkout, no /etc, no grader
processes, nothing writable, no network); without bwrap `--sandbox auto` warns and falls back to a process,
which still refuses the plain-Python bonus to NumPy. The seccomp filter refuses the kernel keyring (add_key,
keyctl: once a channel that joined a file's sandboxes, tests/submissions/ex04/hostile_keyring_replay.py, 75/100
where the same quotas without it score 63) and other kernel interfaces no grading needs (io_uring,
userfaultfd, perf_event_open, bpf, ptrace, process_vm_readv/writev); each sandbox runs as a uid of its own.
The same sandbox run as an unprivileged user: tests/grader/test_sandbox_nonroot.py.
"""

import errno
import os
import platform
import subprocess
import sys

import pytest

from grader import grade_file, mounts, replay, session
from grader.registry import exercise
from helpers import NEEDS_BWRAP, ROOT, SUBS

EX01 = os.path.join(SUBS, "ex01")


# ---- what a submission sees ------------------------------------------------------------------------------------------
LOOK = '''
import os, socket
def look(what):
    if what == "fs":
        return sorted(os.listdir("/")), sorted(os.listdir(os.getcwd())), os.getuid() != 0, os.path.exists("/etc")
    if what == "packages":
        return sorted(os.listdir("/opt/pylib")) if os.path.isdir("/opt/pylib") else []
    if what == "procs":
        return os.path.exists("/proc")
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


@NEEDS_BWRAP
def test_the_sandbox_shows_only_the_submission_and_the_interpreter(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(LOOK)
    requests = [{"id": i, "func": "look", "calls": [{"args": [w]}]}
                for i, w in enumerate(("fs", "procs", "write", "net", "packages"))]
    run = session.run(str(path), "probe.py", ["look"], requests, "bwrap", timeout=10.0)
    (root, work, unprivileged, etc), procs, writable, net, packages = [o["results"][0]["value"] for o in run.outcomes]
    assert work == ["probe.py"] and unprivileged and not etc
    assert set(root) <= {"dev", "grader", "lib", "lib64", "opt", "proc", "root", "tmp", "usr", "work"}
    # Beside the interpreter, only what a notebook may import where Jupyter has it (mounts.COURSE_PACKAGES).
    assert packages == sorted(os.path.basename(d) for d in mounts.package_dirs())
    assert procs is False  # issue 19: no /proc at all (its global files and inode numbers joined sandboxes)
    assert writable == [] and net == "OSError"


@pytest.mark.slow
def test_without_bwrap_auto_warns_and_falls_back(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # no bwrap on this PATH
    cmd = [sys.executable, "-m", "specdec.grade", os.path.join(EX01, "good_plain.py"), "--exercise", "ex01"]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert result.stderr.splitlines()[0].startswith(
        "warning: grading WITHOUT a sandbox (bubblewrap (bwrap) is not installed)")
    assert result.returncode == 0 and result.stdout.splitlines()[-1] == "score: 100/100 (+10 bonus)"
    assert "not sandboxed" in result.stdout
    strict = subprocess.run(cmd + ["--sandbox", "bwrap"], capture_output=True, text=True, cwd=ROOT, env=env,
                            timeout=120)
    assert strict.returncode == 2 and "--sandbox bwrap: bubblewrap (bwrap) is not installed" in strict.stderr


@pytest.mark.slow
def test_process_fallback_still_refuses_the_bonus_to_numpy():
    report = grade_file(os.path.join(EX01, "numpy_correct.py"), "ex01", timeout=5.0, mode="process")
    assert (report.score, report.bonus, report.sandbox) == (100, 0, "process")


# ---- kernel interfaces: the keyring and others -----------------------------------------------------------------------
# From the kernel's syscall tables (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h).
REFUSED = {
    "x86_64": {"add_key": 248, "request_key": 249, "keyctl": 250, "io_uring_setup": 425, "io_uring_enter": 426,
               "io_uring_register": 427, "userfaultfd": 323, "perf_event_open": 298, "bpf": 321, "ptrace": 101,
               "process_vm_readv": 310, "process_vm_writev": 311},
    "aarch64": {"add_key": 217, "request_key": 218, "keyctl": 219, "io_uring_setup": 425, "io_uring_enter": 426,
                "io_uring_register": 427, "userfaultfd": 282, "perf_event_open": 241, "bpf": 280, "ptrace": 117,
                "process_vm_readv": 270, "process_vm_writev": 271},
}


SYSCALLS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def errors(numbers):
    out = {}
    for name, nr in numbers.items():
        # Arguments that would be valid (or harmless) if the call were let through: a keyring id query,
        # a ptrace of pid 1, zero-sized io_uring / bpf requests.
        args = [ctypes.c_long(a) for a in ((0, -4, 0) if name == "keyctl" else (16, 1, 0, 0) if name == "ptrace"
                                             else (0, 0, 0, 0))]
        ctypes.set_errno(0)
        out[name] = 0 if libc.syscall(ctypes.c_long(nr), *args) >= 0 else ctypes.get_errno()
    out["getpid"] = 0 if libc.syscall(ctypes.c_long(%d), ctypes.c_long(0)) >= 0 else ctypes.get_errno()
    return out

def uid(i):
    return os.getuid()
"""


def _probe(tmp_path):
    machine = platform.machine()
    if machine not in REFUSED:
        pytest.skip(f"no syscall table here for {machine}")
    path = tmp_path / "probe.py"
    path.write_text(SYSCALLS % {"x86_64": 39, "aarch64": 172}[machine])
    return str(path), REFUSED[machine]


@NEEDS_BWRAP
def test_the_sandbox_refuses_the_keyring_and_kernel_interfaces_no_grading_needs(tmp_path):
    """Each refused call fails with EPERM from the filter (not EINVAL or ENOSYS from the kernel); getpid works."""
    path, numbers = _probe(tmp_path)
    run = session.run(path, "probe.py", ["errors"], [{"id": 0, "func": "errors", "calls": [{"args": [numbers]}]}],
                      "bwrap")
    got = run.outcomes[0]["results"][0]["value"]
    assert got == dict({name: errno.EPERM for name in numbers}, getpid=0)


@NEEDS_BWRAP
@pytest.mark.skipif(os.geteuid() != 0, reason="as a user, every sandbox is uid 1000 of a user namespace of its own")
def test_the_replay_sandbox_runs_as_another_uid(tmp_path):
    """Nothing the kernel keeps per uid (keyring, process count) joins the first sandbox and the replay's.

    A function that returns its uid answers every call of a case alike in one sandbox, and differently in the
    fresh one, so its replay fails: proof that the two uids differ.
    """
    path, _ = _probe(tmp_path)
    request = {"id": 0, "func": "uid", "calls": [{"args": [i]} for i in range(20)]}
    run = session.run(path, "probe.py", ["uid"], [request], "bwrap", replays=[True])
    values = {r["value"] for r in run.outcomes[0]["results"]}
    assert len(values) == 1 and values.pop() >= 200_000
    assert run.outcomes[0]["replay"] == replay.MESSAGE


@NEEDS_BWRAP
@pytest.mark.slow
def test_quotas_carried_through_the_keyring_fail_every_replay():
    """hostile_keyring_replay scored 75 (every replay passed); now each statistical case of 2000 calls fails it."""
    report = grade_file(os.path.join(SUBS, "ex04", "hostile_keyring_replay.py"), "ex04", timeout=5.0, mode="bwrap")
    batches = {c.name: c.points for c in exercise("ex04").cases(0) if c.replay and len(c.calls) >= 100}
    lost = {c.name: c.message for c in report.cases if not c.passed}
    assert set(lost) == set(batches) and report.score == 100 - sum(batches.values())
    # Each fails its replay, or (its replay now shaped as its first run, issue 19) the count its quotas get wrong.
    assert all(m.startswith((replay.MESSAGE, "the law of")) for m in lost.values())
