"""Nothing a sandbox does may be observable by a later one (issue 19): the page cache, global counters, syscalls.

Every sandbox binds the same read-only host files, so the host's page cache holds one state for all of them:
tests/submissions/ex02/hostile_pagecache_writer.py set the residency of 64 pages of a stdlib file, and
hostile_pagecache_reader.py, graded after it in a fresh sandbox, read the 64 bits back (preadv2 with
RWF_NOWAIT) and scored 100 where it scores 5 alone. Now the seccomp filter refuses the whole residency class
(posix_fadvise, readahead, mincore, cachestat, preadv2/pwritev2, MADV_PAGEOUT/COLD, process_madvise) and
every page of every bound file is resident before a sandbox starts (mounts.prewarm), so the writer gets EPERM
and the reader, whichever way it looks (even by timing reads), reads 64 ones. The kernel's global inode counter
(every pipe, socket, message queue, memfd and /proc inode takes the next number: a sandbox read how many the
previous one had made) is out of reach: no /proc, and those calls are refused. A replayed case's request is
drawn as its first run's was (replay.plan): nothing in it says "replay".
"""

import errno
import os
import platform
import random

import pytest

from grader import replay, session, worker
from grader.mounts import bwrap_argv
from helpers import NEEDS_BWRAP, SUBS

MESSAGE = 0xC0FFEE15DEADBEEF  # the writer's 64 bits (tests/submissions/ex02/hostile_pagecache_writer.py)


def _one(tmp_path, name, func):
    path = tmp_path / name
    path.write_bytes(open(os.path.join(SUBS, "ex02", name), "rb").read())
    run = session.run(str(path), name, [func], [{"id": 0, "func": func, "calls": [{"args": []}]}], "bwrap")
    assert run.load_error is None, run.load_error
    return run.outcomes[0]["results"][0]["value"]


@NEEDS_BWRAP
@pytest.mark.slow  # two sandboxes, each after a residency check of 3,500 files
def test_the_page_cache_relay_between_two_sandboxes_carries_nothing(tmp_path):
    status = _one(tmp_path, "hostile_pagecache_writer.py", "relay_status")
    assert status["fadvise"] == errno.EPERM  # it could not evict a page
    method, bits = _one(tmp_path, "hostile_pagecache_reader.py", "relay_read")
    assert method == "timing"  # preadv2 and mincore refused: it can only time its reads, and every page is resident
    agree = sum(b == (MESSAGE >> i & 1) for i, b in enumerate(bits))
    assert sum(bits) >= 58 and agree <= bin(MESSAGE).count("1") + 6  # ones, and noise: no better than all ones


# ---- the syscalls refused, by class ------------------------------------------------------------------------------
PROBE = """
import ctypes, errno, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def call(nr, *args):
    ctypes.set_errno(0)
    return 0 if libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args]) >= 0 else ctypes.get_errno()

def errors(numbers):
    out = {name: call(nr, -1, 0, 0, 0) for name, nr in numbers.items() if name not in ("clone", "fcntl", "madvise")}
    fd = os.open(os.__file__, os.O_RDONLY)
    out["fcntl F_GETFL"] = call(numbers["fcntl"], fd, 3, 0)
    out["fcntl F_SETLK"] = call(numbers["fcntl"], fd, 6, 0)
    out["fcntl F_NOTIFY"] = call(numbers["fcntl"], fd, 1026, 0)
    m = mmap.mmap(-1, 4096)
    address = ctypes.addressof(ctypes.c_char.from_buffer(m))
    out["madvise MADV_PAGEOUT"] = call(numbers["madvise"], address, 4096, 21)
    out["madvise MADV_DONTNEED"] = call(numbers["madvise"], address, 4096, 4)
    out["clone CLONE_PIDFD"] = call(numbers["clone"], 0x1000 | 17, 0, 0, 0, 0)
    try:
        os.preadv(fd, [bytearray(1)], 0)  # no flags: glibc falls back to preadv
        out["os.preadv"] = 0
    except OSError as exc:
        out["os.preadv"] = exc.errno
    for name, fn in (("os.pipe", os.pipe), ("os.posix_fadvise", lambda: os.posix_fadvise(fd, 0, 0, 4))):
        try:
            fn()
            out[name] = 0
        except OSError as exc:
            out[name] = exc.errno
    out["/proc"] = os.path.exists("/proc/stat") or os.path.exists("/proc/self")
    return out
"""


@NEEDS_BWRAP
def test_every_refused_call_fails_and_what_python_needs_still_works(tmp_path):
    machine = platform.machine()
    if machine not in worker.NUMBERS:
        pytest.skip(f"no syscall table here for {machine}")
    numbers = worker.NUMBERS[machine]
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    run = session.run(str(path), "probe.py", ["errors"], [{"id": 0, "func": "errors", "calls": [{"args": [numbers]}]}],
                      "bwrap")
    got = run.outcomes[0]["results"][0]["value"]
    expected = {name: errno.EPERM for name in worker.REFUSED if name in numbers}
    expected.update({name: errno.ENOSYS for name in worker.NO_SUCH if name in numbers})
    expected.update({name: errno.EAFNOSUPPORT for name in worker.NO_FAMILY})
    expected.update({"fcntl F_GETFL": 0, "fcntl F_SETLK": errno.EPERM, "fcntl F_NOTIFY": errno.EPERM,
                     "madvise MADV_PAGEOUT": errno.EPERM, "madvise MADV_DONTNEED": 0, "clone CLONE_PIDFD": errno.EPERM,
                     "os.preadv": 0, "os.pipe": errno.ENOSYS, "os.posix_fadvise": errno.EPERM, "/proc": False})
    assert {k: got.get(k) for k in expected} == expected
    assert {"io_setup", "fadvise64", "mincore", "cachestat", "flock", "inotify_add_watch"} <= set(worker.REFUSED)


def test_the_sandbox_mounts_no_proc_and_binds_libraries_not_their_folders():
    argv = bwrap_argv("/tmp/x/submission.py")
    assert "--proc" not in argv
    binds = [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
    assert not any(b.rstrip("/").endswith(("-linux-gnu", "/lib64", "/usr/lib")) for b in binds)  # no library folder


# ---- a replayed request looks like a first run's ------------------------------------------------------------------
def _case(n, rand):
    q, p = [[0.5, 0.5]], [[0.25, 0.75], [0.5, 0.5]]
    calls = [{"args": [[rand.randrange(2)], q, p, {"$rng": rand.getrandbits(64)}]} for _ in range(n)]
    calls[0]["globals"] = rand.randrange(2 ** 31)
    return {"id": 5, "func": "sample", "calls": calls, "echo_args": False}


def test_a_replayed_request_has_its_first_runs_shape_and_the_other_cases_go_along():
    rand = random.Random(7)
    requests = [_case(2000, rand), {"id": 6, "func": "sample", "calls": [{"args": [1]}], "echo_args": True},
                _case(2000, rand)]
    outcomes = [{"results": [{"value": j} for j in range(len(r["calls"]))]} for r in requests]
    planned = replay.plan(requests, outcomes, [True, False, True])
    assert [picks is None for _, picks in planned] == [False, True, False]  # the exact case goes along, unjudged
    for (sent, picks), first in zip(planned, requests):
        assert set(sent) == set(first) and len(sent["calls"]) == len(first["calls"])
        assert [("globals" in c) for c in sent["calls"]] == [("globals" in c) for c in first["calls"]]
        if picks is None:
            assert sent == first
            continue
        seeds = [c["args"][3]["$rng"] for c in sent["calls"]]
        original = {c["args"][3]["$rng"] for c in first["calls"]}
        assert len(picks[1]) == replay.SIZE and sum(s in original for s in seeds) == replay.SIZE  # half new seeds
        assert max(seeds) >= 2 ** 63 and sent["calls"][0]["globals"] != first["calls"][0]["globals"]
        assert all(sent["calls"][k]["args"][3]["$rng"] == first["calls"][j]["args"][3]["$rng"] for k, j in picks[1])


SPY = '''
import sys
SEEN = []

def f(x):
    frame = sys._getframe(1)
    while "request" not in frame.f_locals:
        frame = frame.f_back
    request = frame.f_locals["request"]
    if not SEEN or SEEN[-1][0] != request["id"]:
        SEEN.append((request["id"], len(request["calls"])))
    return [x, len(SEEN), request["id"], len(request["calls"])]
'''


def test_in_the_replay_sandbox_a_statistical_request_comes_among_the_others_under_a_random_id(tmp_path):
    path = tmp_path / "spy.py"
    path.write_text(SPY)
    requests = [{"id": i, "func": "f", "calls": [{"args": [i]}]} for i in range(12)]
    requests.append({"id": 12, "func": "f", "calls": [{"args": [100 + j]} for j in range(30)]})
    run = session.run(str(path), "spy.py", ["f"], requests, "process", replays=[False] * 12 + [True])
    assert run.outcomes[12]["replay"] == replay.MESSAGE  # its answers name its place and id: they change
    first = run.outcomes[12]["results"][0]["value"]
    assert first[2] >= 2 ** 20 and first[3] == 30
