"""Red team 5: the sandbox boundary itself, and what the worker trusts.

- The kernel keyring joined the sandboxes of one file: they all ran as one uid, and the seccomp filter let
  add_key and keyctl through, so a file stored its quota cut points in the user keyring and read them back
  in the replay sandbox, passing every replay (tests/submissions/ex04/hostile_keyring_replay.py: 75/100,
  where the same quotas without the keyring score 63). Now the filter refuses the keyring calls (and other
  kernel interfaces no grading needs: io_uring, userfaultfd, perf_event_open, bpf, ptrace,
  process_vm_readv/writev) and every sandbox runs as a uid of its own.
- Answers and exceptions the worker could not write as JSON (an int over 4,300 digits, an exception class
  whose name is not a str, a str() that slices to a dict, a `__module__` that raises when compared) killed
  the worker ("the worker exited ...: a crash", 17 of 23 cases of tests/submissions/ex02/hostile_unencodable.py)
  or were refused as protocol errors; and `check()` on a function returning such an int crashed with a
  ValueError from the grader's own code. Now every one is a case that fails saying what came back.
"""

import errno
import os
import platform
import textwrap

import pytest

from grader import check, grade_file, replay, session, worker
from grader.registry import exercise
from grader.sandbox import bwrap_problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(ROOT, "tests", "submissions")
NEEDS_BWRAP = pytest.mark.skipif(bool(bwrap_problem()), reason=f"no sandbox here: {bwrap_problem()}")

# From the kernel's syscall tables (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h).
REFUSED = {
    "x86_64": {"add_key": 248, "request_key": 249, "keyctl": 250, "io_uring_setup": 425, "io_uring_enter": 426,
               "io_uring_register": 427, "userfaultfd": 323, "perf_event_open": 298, "bpf": 321, "ptrace": 101,
               "process_vm_readv": 310, "process_vm_writev": 311},
    "aarch64": {"add_key": 217, "request_key": 218, "keyctl": 219, "io_uring_setup": 425, "io_uring_enter": 426,
                "io_uring_register": 427, "userfaultfd": 282, "perf_event_open": 241, "bpf": 280, "ptrace": 117,
                "process_vm_readv": 270, "process_vm_writev": 271},
}
PROBE = """
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
    path.write_text(PROBE % {"x86_64": 39, "aarch64": 172}[machine])
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
    assert all(m.startswith(replay.MESSAGE) for m in lost.values())


@pytest.mark.slow
def test_answers_and_exceptions_json_cannot_hold_fail_their_cases_with_a_message():
    """Every case fails (score 0) saying what came back; none says the worker crashed or the grader did."""
    report = grade_file(os.path.join(SUBS, "ex02", "hostile_unencodable.py"), "ex02", timeout=5.0, mode="process")
    messages = [c.message for c in report.cases]
    assert report.score == 0 and not any(c.passed for c in report.cases)
    for bad in ("worker exited", "not strings", "GRADER BUG", "protocol"):
        assert not any(bad in m for m in messages), bad
    for said in ("is an int with more than 3913 digits", "raised (a name that is not a string): odd",
                 "raised Sly: (str() of the exception failed)", "raised Unnamed: unnamed"):
        assert any(said in m for m in messages), said


def test_describe_exception_never_raises_and_gives_only_strings():
    class Raises:
        def __eq__(self, other):
            raise RuntimeError("no")
        __hash__ = object.__hash__

    class Unnamed(KeyError):
        pass
    Unnamed.__module__ = Raises()
    try:
        raise Unnamed("k")
    except Unnamed as exc:
        info = worker.describe_exception(exc, "nowhere.py")
    # str(KeyError("k")) is "'k'"; the class whose module cannot be compared is left out of the builtin ones.
    assert info == {"type": "Unnamed", "message": "'k'", "builtin_types": ["KeyError", "LookupError", "Exception",
                                                                            "BaseException", "object"]}


@pytest.mark.parametrize("digits", [400, 5000])
def test_check_reports_a_huge_int_instead_of_crashing(digits):
    """In a learner's own session too: 10**5000 made check() raise ValueError from the grader's code."""
    big = 10 ** digits

    def softmax(logits, temperature=1.0):
        return [big for _ in logits]
    report = check(softmax, exercise="ex02", quiet=True)
    said = f"an int with {digits + 1} digits" if digits < 3913 else "an int with more than 3913 digits"
    assert report.score == 0 and said in report.cases[0].message
