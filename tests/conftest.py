"""Shared test settings, the shared fixture, and the `slow` marker's rule.

Settings: NumPy's OpenBLAS runs on one thread, and hypothesis runs derandomized, so every run tries the same
examples. Fixture: `models`, the shipped (draft, target) pair, loaded once per test process. Helpers are a
module of their own, tests/helpers.py (`from helpers import ...`), as are the independent references,
tests/references.py; this file is the only conftest (pyproject.toml's norecursedirs keeps pytest out of
tests/submissions/).

The `slow` marker: `make quick` (`-m "not slow"`) is the developer's loop, `make test` runs everything. A test
not marked slow whose call takes more than SLOW_SECONDS FAILS a run that deselects slow, saying how long it
took and what to do; every run lists such tests (and setups over the limit: a slow fixture) in its summary.
The rule is a plugin (`SlowRule`, registered below) so that it covers the notebooks' cells and the modules'
doctests as well as tests/. Its `pytest_runtest_makereport` runs where the test runs, so the rule holds under
pytest-xdist too: the failed report reaches the controller like any other. Mark slow what takes more than
about half a second (measure with `--durations=0`), so that a busy machine does not push it past the limit.
"""

import os

# Subtle: OpenBLAS starts a thread per core for every matrix product. On a busy 2-core machine those threads spin
# against the other processes: the sampled-generation test of tests/library/test_decode.py took 1.9 s to 28.7 s
# from run to run with them, 2.3 s to 2.9 s with one thread. So the suite pins one thread. It must be set before
# NumPy loads OpenBLAS (pytest loads this file before any test module); notebook kernels started later inherit it.
# setdefault: an explicit OPENBLAS_NUM_THREADS from the caller wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest  # noqa: E402  (after the environment variable, on purpose)
from hypothesis import HealthCheck, settings  # noqa: E402

# derandomize: a red CI is reproducible on any machine; deadline=None: no timing-based failures on a busy 2-core box.
settings.register_profile("specdec", derandomize=True, deadline=None, max_examples=200,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("specdec")


@pytest.fixture(scope="session")
def models():
    """(draft, target): the shipped draft and the MLP target (loaded once; its calls cost a small fraction of the
    transformer's), shared by every test of a process. The transformer: tests/library/test_transformer.py.

    Sharing is safe: the models' only state is caches of rows already computed (tests/library/test_decode.py
    checks that a cold and a warm draft give the same tokens).
    """
    from specdec.models import load_pretrained
    return load_pretrained(target="mlp")


# ---- the slow marker -----------------------------------------------------------------------------------------
# The limit, in seconds of wall time. SPECDEC_SLOW_SECONDS changes it (e.g. 3 on a machine busy with other work,
# where every test takes two or three times as long; 0 lists every test).
SLOW_SECONDS = float(os.environ.get("SPECDEC_SLOW_SECONDS", "1"))

# Notebooks (notebooks/*.ipynb, exercises/*/*.ipynb, run by nbval: each cell is an item, all of a notebook's
# cells share one kernel, in one worker). Marking single cells slow would break a notebook: a quick run would
# skip the cell that defines what the next cells use. So a notebook is slow or not as a whole: every cell of a
# notebook below is marked slow at collection (quick skips the notebook; `make test` runs it). Listed: the
# notebooks with a cell (other than the first) above about half a second on an idle 2-core machine (generation
# with the shipped models, Monte Carlo, timings, grading). Not held to the limit: the kernel's start-up (nbval's
# setup of the notebook, ~0.6 s) and the first code cell ("Cell 0", which imports NumPy, matplotlib and specdec
# into the fresh kernel, 0.5 s to 1 s): every notebook pays them once. Any other cell of a notebook not listed
# that takes more than SLOW_SECONDS fails the quick run like any test, and says to list its notebook here.
SLOW_NOTEBOOKS = {
    "notebooks/03_deriving_the_acceptance_rule.ipynb",
    "notebooks/04_verify_step_by_step.ipynb",
    "notebooks/05_lossless_in_practice.ipynb",
    "notebooks/06_speedup_theory.ipynb",
    "notebooks/07_end_to_end.ipynb",
    "notebooks/08_inside_one_target_call.ipynb",
    "notebooks/09_where_the_speedup_comes_from.ipynb",
    "notebooks/10_block_verification.ipynb",
    "notebooks/11_many_drafts_and_trees.ipynb",
    "notebooks/12_batched_verification.ipynb",
    "notebooks/13_where_drafts_come_from.ipynb",
    "exercises/ex04_sampler/ex04_sampler.ipynb",
    "exercises/ex06_block/ex06_block.ipynb",
}


def _is_notebook(item):
    return item.path.suffix == ".ipynb"


def _held_to_the_limit(nodeid, when):
    """Whether a report's phase counts: a test's call; a notebook cell's call, but the first cell's (above)."""
    if nodeid.split("::")[0].endswith(".ipynb"):
        return when == "call" and not nodeid.endswith("::Cell 0")
    return when == "call"


def _deselects_slow(config):
    """Whether this run is the quick loop: its -m expression leaves out the slow tests."""
    return "not slow" in " ".join((config.getoption("markexpr") or "").split())


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the marks must be there when it looks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_notebook(item) and item.path.relative_to(config.rootpath).as_posix() in SLOW_NOTEBOOKS:
            item.add_marker(pytest.mark.slow)


class SlowRule:
    """The rule, as a plugin: a conftest's own run-time hooks would see only the items under tests/, and the
    notebooks, the modules' doctests and tests/ must all keep it."""

    def __init__(self):
        self.seen = []  # (nodeid, phase, seconds) of the reports this process saw

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if (_held_to_the_limit(item.nodeid, report.when) and report.passed and report.duration > SLOW_SECONDS
                and item.get_closest_marker("slow") is None and _deselects_slow(item.config)):
            fix = f"list {item.path.name} in SLOW_NOTEBOOKS (tests/conftest.py)" if _is_notebook(item) else \
                "mark it @pytest.mark.slow, or make it faster"
            report.outcome = "failed"
            report.longrepr = (f"took {report.duration:.2f} s: more than the {SLOW_SECONDS:g} s allowed a test not "
                               f"marked slow when slow tests are deselected; {fix}")

    def pytest_runtest_logreport(self, report):
        # Under xdist this runs on the controller too, with every worker's reports: the summary lists them all.
        # Slow setups are listed, not failed: a session fixture's one load (`models`, ~0.3 s, more on a busy
        # machine) lands on whichever test of a process uses it first.
        python_setup = report.when == "setup" and not report.nodeid.split("::")[0].endswith(".ipynb")
        if (_held_to_the_limit(report.nodeid, report.when) or python_setup) and report.duration > SLOW_SECONDS \
                and "slow" not in report.keywords:
            self.seen.append((report.nodeid, report.when, report.duration))

    def pytest_terminal_summary(self, terminalreporter, config):
        if hasattr(config, "workerinput") or not self.seen:
            return
        verdict = "calls failed: mark them slow" if _deselects_slow(config) else "`make quick` fails on the calls"
        terminalreporter.section(f"tests not marked slow that took more than {SLOW_SECONDS:g} s ({verdict})")
        for nodeid, when, seconds in sorted(self.seen, key=lambda r: -r[2]):
            terminalreporter.write_line(f"{seconds:6.2f} s  {when:5}  {nodeid}")


def pytest_configure(config):
    config.pluginmanager.register(SlowRule(), "specdec-slow-rule")
