"""The graded path is plain Python: `import specdec` and its functions work with NumPy blocked.

The graded problem awards 10 bonus points for a plain-Python solution, and the kit promises
that importing specdec imports no NumPy. A fresh interpreter (sys.executable) installs
a meta-path finder that raises ImportError for 'numpy' and its submodules, proves the
blocker works, then imports specdec and calls the plain-Python functions. Their results
are compared with the same calls made here, in a process where NumPy is importable,
and with the graded problem's expected output.
"""

import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import specdec
from specdec import theory

REPO = Path(specdec.__file__).resolve().parents[1]


def plain_calls(specdec, theory):
    """The plain-Python functions on fixed inputs: called in the NumPy-blocked child (its source
    is sent there by inspect.getsource) and here, so the two result tables come from one text."""
    return {
        "sample": specdec.speculative_sample([0, 1], [[0.5, 0.5], [0.5, 0.5]],
                                             [[0.25, 0.75], [0.75, 0.25], [0.5, 0.5]], rng=1234),
        "softmax": specdec.softmax([2.0, 1.0, 0.0], temperature=0.5),
        "residual": specdec.residual_distribution([0.1, 0.6, 0.3], [0.5, 0.2, 0.3]),
        "exact": theory.exact_output_distribution([0.1, 0.6, 0.3], [0.5, 0.2, 0.3]),
        "beta": theory.acceptance_rate([0.1, 0.6, 0.3], [0.5, 0.2, 0.3]),
        "tokens_per_step": theory.expected_tokens_per_step(0.8, 4),
        "speedup": theory.walltime_speedup(0.8, 4, 0.05),
        "gamma_star": theory.optimal_draft_length(0.8, 0.05),
        "counts": theory.accepted_count_distribution(0.8, 4),
    }


CHILD = textwrap.dedent("""
    import json, sys

    class BlockNumpy:
        # A meta-path finder consulted before the standard ones: 'numpy' cannot be imported.
        def find_spec(self, name, path=None, target=None):
            if name == "numpy" or name.startswith("numpy."):
                raise ImportError(f"numpy is blocked in this test ({name})")
            return None

    sys.meta_path.insert(0, BlockNumpy())

    try:
        import numpy  # noqa: F401
        blocker_works = False
    except ImportError:
        blocker_works = True

    import specdec
    from specdec import theory
""") + inspect.getsource(plain_calls) + textwrap.dedent("""
    out = {
        "blocker_works": blocker_works,
        "specdec_file": specdec.__file__,
        "seed_1": specdec.verify_speculative_tokens(
            [2, 1], [[0.1, 0.2, 0.7], [0.2, 0.6, 0.2]],
            [[0.05, 0.15, 0.8], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], [0.5, 0.4]),
        "rejection": specdec.verify_speculative_tokens(
            [2, 0], [[0.2, 0.3, 0.5], [0.6, 0.15, 0.25]],
            [[0.1, 0.4, 0.5], [0.2, 0.45, 0.35], [0.0, 0.0, 1.0]], [0.9, 0.7]),
        **plain_calls(specdec, theory),
        "numpy_modules": sorted(m for m in sys.modules if m == "numpy" or m.startswith("numpy.")),
    }
    print(json.dumps(out))
""")


def run_child():
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_specdec_works_with_numpy_blocked():
    child = run_child()
    # the blocker really blocks: otherwise this test could not fail
    assert child["blocker_works"] is True
    # the child imported the same specdec as this process
    assert Path(child["specdec_file"]).resolve() == Path(specdec.__file__).resolve()
    # and neither specdec nor anything it imported pulled in numpy
    assert child["numpy_modules"] == []

    # the graded problem's example 1, verbatim, and the hand-worked rejection of test_verify.py
    assert child["seed_1"] == {"accepted_tokens": [2, 1], "bonus_token": 0, "acceptance_count": 2}
    assert child["rejection"] == {"accepted_tokens": [2], "bonus_token": 1, "acceptance_count": 1}

    # every other result equals the same call made here, where numpy is importable
    here = plain_calls(specdec, theory)
    for key, value in here.items():
        assert child[key] == json.loads(json.dumps(value)), key

    # and a few against hand arithmetic: beta = 0.1 + 0.2 + 0.3; (1 - 0.8^5) / 0.2 = 3.3616
    assert abs(child["beta"] - 0.6) < 1e-12
    assert abs(child["tokens_per_step"] - 3.3616) < 1e-12
    assert abs(child["speedup"] - 3.3616 / 1.2) < 1e-12
