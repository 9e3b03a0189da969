"""Resources outside the sandbox's accounts, and time limits that a classmate's CPU hog cannot spend (issue 19).

Each sandbox gets a cgroup of its own where the machine has writable cgroup v1 memory, cpuacct and pids
hierarchies (sandbox.Cgroup: memory, cpu.shares, pids.max; removed with the sandbox, its processes killed
first), else rlimits alone; `Run.sandbox_limits` says which. Time limits count the sandbox's CPU time (its
cgroup's cpuacct usage, else the sum over its processes) and, for a file that sleeps, the time it waits with
no thread running or waiting for a CPU; a machine too busy to run a sandbox at all is the host's doing.
Asynchronous I/O contexts (io_setup, a host-wide pool: one sandbox once held all 65,536) are refused by the
seccomp filter (tests/grader/test_isolation.py).
"""

import os
import subprocess
import sys
import time

import pytest

from grader import sandbox, session
from helpers import MODE

CGROUPS = bool(sandbox.cgroup_parents())
NEEDS_CGROUPS = pytest.mark.skipif(not CGROUPS, reason="no writable cgroup v1 memory/cpuacct/pids hierarchy here")

PROBE = '''
import os, time

def fork(n):
    made = 0
    for _ in range(n):
        try:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            made += 1
        except OSError:
            break
    return made

def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return seconds

def nap(seconds):
    time.sleep(seconds)
    return seconds

def cgroup(what):
    with open("/proc/self/cgroup") as f:
        lines = dict(line.split(":", 2)[1:] for line in f.read().splitlines())
    path = lines["memory"].strip()
    root = [l.split()[4] for l in open("/proc/self/mountinfo") if " - cgroup " in l and "memory" in l.split()[-1]][0]
    with open(root + path + "/memory.limit_in_bytes") as f:
        return [path.rsplit("/", 1)[-1].split("-")[0], int(f.read())]
'''


def _run(tmp_path, func, args, mode=MODE, **options):
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    requests = [{"id": 0, "func": func, "calls": [{"args": args}]}]
    return session.run(str(path), "probe.py", [func], requests, mode, **options)


def _specdec_cgroups():
    return [n for parent in set(sandbox.cgroup_parents().values()) for n in os.listdir(parent)
            if n.startswith(f"specdec-{os.getpid()}-")]


@NEEDS_CGROUPS
@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are the root grader's")
def test_each_sandbox_has_its_own_cgroup_which_goes_with_it(tmp_path):
    run = _run(tmp_path, "cgroup", ["memory"], mode="process")
    name, limit = run.outcomes[0]["results"][0]["value"]
    assert (name, limit) == ("specdec", sandbox.MEMORY)
    assert run.sandbox_limits.startswith("a cgroup per sandbox") and _specdec_cgroups() == []


@NEEDS_CGROUPS
@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are the root grader's")
def test_the_process_count_is_the_cgroups_even_without_a_uid_of_its_own(tmp_path):
    """process mode has no RLIMIT_NPROC (its uid is the grader's): pids.max bounds it."""
    run = _run(tmp_path, "fork", [20], mode="process")
    assert run.outcomes[0]["results"][0]["value"] <= sandbox.PIDS - 1


@pytest.mark.slow
def test_a_spinning_case_times_out_on_cpu_time_and_a_sleeping_one_once_it_has_waited_its_own_limit(tmp_path,
                                                                                                  monkeypatch):
    started = time.monotonic()
    spin = _run(tmp_path, "spin", [30], timeout=0.5, max_seconds=20)
    spun = time.monotonic() - started
    assert spin.outcomes[0] == {"failure": "timed out after 0.5 s"} and 0.4 < spin.cpu_seconds < 2.0 and spun < 3
    assert spin.stopped == 1 and not spin.host
    monkeypatch.setattr(session, "BLOCKED", 0.5)   # the waiting a case may do on nothing but itself
    started = time.monotonic()
    nap = _run(tmp_path, "nap", [30], timeout=10.0, max_seconds=20)
    napped = time.monotonic() - started
    assert nap.outcomes[0]["failure"].startswith("stopped after waiting 0.5 s without running")
    assert nap.cpu_seconds < 0.5 and 0.5 <= nap.blocked_seconds < 1.5 and napped < 4 and nap.stopped == 1


@pytest.mark.slow
def test_a_case_the_machine_never_runs_is_the_hosts_doing_not_the_files(tmp_path, monkeypatch):
    """A sandbox that is always runnable but never gets the CPU (a machine so busy it never runs it) reaches the
    host's backstop: the case says so and the run is marked for a regrade (`Run.host`), never "timed out"."""
    monkeypatch.setattr(sandbox, "running", lambda proc: True)   # as a starved sandbox looks: waiting for a CPU
    monkeypatch.setattr(session, "HOST_FACTOR", 1.0)
    monkeypatch.setattr(session, "HOST_SLACK", 0.5)
    run = _run(tmp_path, "nap", [30], timeout=0.5, max_seconds=20)
    assert run.outcomes[0] == {"failure": session.HOST} and run.host and run.stopped == 0


@pytest.mark.slow
def test_without_cgroups_the_limits_say_so_and_cpu_time_is_summed_over_the_processes(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "cgroup_parents", lambda: {})
    run = _run(tmp_path, "spin", [0.3], timeout=5.0)
    assert run.outcomes[0]["results"][0]["value"] == 0.3
    assert "rlimits (address space 512 MiB" in run.sandbox_limits and "only" in run.sandbox_limits
    assert 0.3 <= run.cpu_seconds < 2.0


HOG = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        os.setsid()  # each spinner in a session of its own: the scheduler's autogroups weigh it as a user
        break
end = time.monotonic() + 12
while time.monotonic() < end:
    pass
"""


@pytest.mark.slow
def test_an_honest_case_does_not_time_out_beside_a_cpu_hog_of_setsid_spinners(tmp_path):
    hog = subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True)
    try:
        time.sleep(0.3)
        started = time.monotonic()
        run = _run(tmp_path, "spin", [0.7], timeout=1.0, max_seconds=10)  # 0.7 s of CPU against a 1 s limit
        waited = time.monotonic() - started
    finally:
        os.killpg(hog.pid, 9)
        hog.wait()
    assert run.outcomes[0]["results"][0]["value"] == 0.7, (run.outcomes, waited)
