"""exercises/make_exercises.py: stubs and notebooks generated from the solutions, and committed up to date."""

import os

import pytest

from helpers import ROOT, load


def test_committed_stubs_and_notebooks_are_up_to_date():
    make = load(os.path.join(ROOT, "exercises", "make_exercises.py"))
    assert make.generate(check_only=True) == []


def test_make_stub_replaces_function_blocks_and_drops_module_blocks():
    make = load(os.path.join(ROOT, "exercises", "make_exercises.py"))
    source = ('"""Doc."""\n\n### BEGIN SOLUTION\nimport math\n### END SOLUTION\n\n\n'
              'def f(x):\n    """Say f."""\n    ### BEGIN SOLUTION\n    return math.sqrt(x)\n    ### END SOLUTION\n')
    assert make.make_stub(source) == ('"""Doc."""\n\n\ndef f(x):\n    """Say f."""\n'
                                      '    raise NotImplementedError("write f")\n')
    with pytest.raises(ValueError, match="never closed"):
        make.make_stub("def f():\n    ### BEGIN SOLUTION\n    pass\n")
