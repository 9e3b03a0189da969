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


def test_each_notebook_links_its_statement_instead_of_repeating_it():
    """The statement (README.md) is linked, summarised in its own first paragraph, never copied; one "Check
    yourself" heading; every file it names is a markdown link, relative to the exercise's folder, to a file that
    exists; the kernel is the one Jupyter names "Python 3 (ipykernel)"."""
    import glob
    import json
    import re
    for path in sorted(glob.glob(os.path.join(ROOT, "exercises", "ex[0-9][0-9]_*", "ex[0-9][0-9]_*.ipynb"))):
        folder = os.path.dirname(path)
        nb = json.load(open(path, encoding="utf-8"))
        statement = open(os.path.join(folder, "README.md"), encoding="utf-8").read()
        markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        assert nb["metadata"]["kernelspec"]["display_name"] == "Python 3 (ipykernel)", path
        assert markdown.count("## Check yourself") == 1 and "## How it is graded" not in markdown, path
        assert "[`README.md`](README.md)" in markdown, path
        first = next(b for b in statement.split("\n\n")[1:] if not b.startswith(("#", "**")))
        assert " ".join(first.split()) in markdown, path         # the one-paragraph summary
        assert len(markdown) < len(statement) / 2, path           # not the statement again
        links = re.findall(r"\]\(([^)]+)\)", markdown)
        assert links and all(not link.startswith(("/", "http")) for link in links), path
        assert all(os.path.exists(os.path.join(folder, link)) for link in links), path
        plain = re.sub(r"\[`[^`]+`\]\([^)]+\)", "", markdown)      # what is left outside the links
        assert not re.search(r"`[^`\s]+\.(?:ipynb|py|md)`", plain), (path, re.findall(r"`[^`\s]+\.\w+`", plain))
