"""Maintainer script: generate the learners' stubs and exercise notebooks from the solutions.

    python exercises/make_exercises.py            # write exercises/exNN_*/exNN_*.py and .ipynb
    python exercises/make_exercises.py --check    # exit 1 if the committed ones are out of date
    python exercises/make_exercises.py --execute  # also re-run notebooks that did not change

It lives apart from the `specdec` package: learners and the grader never need it.

In each exercises/exNN_name/solution.py, a block between `### BEGIN SOLUTION`
and `### END SOLUTION` lines is what the learner writes. Inside a function it
becomes `raise NotImplementedError("write <function>")` at the block's
indentation; at module level (helpers, imports only the solution needs) it is
dropped. Everything else is kept verbatim:

    >>> print(make_stub("def f(x):\\n    '''Doc.'''\\n    ### BEGIN SOLUTION\\n    return x\\n    ### END SOLUTION\\n"))
    def f(x):
        '''Doc.'''
        raise NotImplementedError("write f")
    <BLANKLINE>

The notebook: a link to the statement (the exercise's README.md, never copied
into it) with a one-paragraph summary, the stub's code, and a check cell whose
value is the grader's Report (an HTML table in Jupyter). Its file references
are markdown links, relative to the exercise's folder. A notebook that changes is executed (nbconvert's
ExecutePreprocessor) so it is committed with its outputs, as nbval wants;
on the stub the check shows one short line ("not written yet"), not a wall
of failures. `--check` compares the .py exactly and the notebook's cell
sources (not outputs).
"""

import argparse
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def make_stub(source):
    """The student's version of a solution's source (see the module docstring)."""
    out, inside, function = [], False, None
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        match = re.match(r"\s*(?:async\s+)?def\s+(\w+)", line)
        if match and not inside:
            function = match.group(1)
        if stripped == BEGIN:
            if inside:
                raise ValueError(f"line {number}: {BEGIN} inside another block")
            inside = True
            indent = line[:len(line) - len(line.lstrip())]
            if indent:
                out.append(f'{indent}raise NotImplementedError("write {function}")')
        elif stripped == END:
            if not inside:
                raise ValueError(f"line {number}: {END} without {BEGIN}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN} is never closed")
    text = re.sub(r"\n{4,}", "\n\n\n", "\n".join(out).strip("\n") + "\n")  # dropped blocks leave gaps
    return text


def _functions(stub):
    return re.findall(r"^def\s+(\w+)", stub, flags=re.M)


def summary(statement):
    """(title, the statement's first paragraph of prose, the lesson notebook it names or None)."""
    blocks = [b.strip() for b in statement.split("\n\n") if b.strip()]
    title = blocks[0].lstrip("# ").strip() if blocks and blocks[0].startswith("# ") else ""
    prose = next((b for b in blocks[1:] if not b.startswith(("#", "**", "```", "|", "-"))), "")
    lesson = re.search(r"notebooks/(\d\d)_\w+\.ipynb", statement)
    return title, " ".join(prose.split()), lesson


def _linked(text):
    """Every `file` reference of an exercise's page as a markdown link, relative to the exercise's folder:
    `notebooks/LL_name.ipynb` (a lesson) and `exNN_name.py` / `.ipynb` / `README.md` (the folder's own)."""
    text = re.sub(r"`(notebooks/\d\d_\w+\.ipynb)`", r"[`\1`](../../\1)", text)
    return re.sub(r"(?<!\[)`((?:ex\d\d_\w+\.(?:py|ipynb))|README\.md)`(?!\])", r"[`\1`](\1)", text)


def make_notebook(folder, stub):
    """The exercise notebook for `folder` (exNN_name) given its stub source: a link to the statement with a
    one-paragraph summary (the statement itself is README.md, never copied), the stub's cell, the check cell."""
    import nbformat
    name = os.path.basename(folder)
    readme = os.path.join(folder, "README.md")
    statement = open(readme, encoding="utf-8").read() if os.path.exists(readme) else f"# {name}"
    title, prose, lesson = summary(statement)
    functions = ", ".join(_functions(stub))
    after = (f"It follows lesson [{lesson.group(1)}](../../{lesson.group(0)}). " if lesson else "")
    intro = (f"# {title or name}\n\n{prose}\n\n**The statement is [`README.md`](README.md)**: what to write, the "
             f"rule, the examples, the errors and how it is graded. Read it first; this "
             f"notebook holds only your code and the check. {after}To work in a file instead, copy "
             f"`{name}.py` (the same stub).")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(_linked(intro)),
        nbformat.v4.new_markdown_cell("## Your code\n\nReplace each `raise NotImplementedError(...)` below and "
                                      "run the cell, then run the check cell. Until then the check says the "
                                      "function is not written yet."),
        nbformat.v4.new_code_cell(stub.rstrip("\n")),
        nbformat.v4.new_markdown_cell(_linked(
            "## Check yourself\n\nThe public cases and a case of every hidden kind, run here in your session "
            f"(as `python -m grader.practice {name}.ipynb` runs them in a terminal, in this folder): failures "
            "first, then one most likely cause. (The plain-Python bonus is decided by the grader, which runs your "
            f"file in a sandbox without NumPy.) The statement's section \"How it is graded\" in `README.md` says "
            "what each case checks.")),
        nbformat.v4.new_code_cell(f'from grader import check\n\ncheck({functions}, exercise="{name[:4]}")'),
    ]
    return nb


def _sources(nb):
    return [(c.cell_type, c.source) for c in nb.cells]


def generate(root=ROOT, check_only=False, execute=False):
    """Write (or, with check_only, compare) every stub and notebook; return the stale paths."""
    import nbformat
    stale = []
    for solution in sorted(glob.glob(os.path.join(root, "exercises", "ex[0-9][0-9]_*", "solution.py"))):
        folder = os.path.dirname(solution)
        base = os.path.join(folder, os.path.basename(folder))
        stub = make_stub(open(solution, encoding="utf-8").read())
        nb = make_notebook(folder, stub)
        old_stub = open(base + ".py", encoding="utf-8").read() if os.path.exists(base + ".py") else None
        old_nb = nbformat.read(base + ".ipynb", as_version=4) if os.path.exists(base + ".ipynb") else None
        if old_stub != stub:
            stale.append(base + ".py")
        if old_nb is None or _sources(old_nb) != _sources(nb):
            stale.append(base + ".ipynb")
        if check_only:
            continue
        with open(base + ".py", "w", encoding="utf-8") as f:
            f.write(stub)
        if execute or old_nb is None or _sources(old_nb) != _sources(nb):
            if old_nb is not None and len(old_nb.cells) == len(nb.cells):
                for cell, old_cell in zip(nb.cells, old_nb.cells):   # the committed cell ids: no churn in diffs
                    cell.id = old_cell.get("id", cell.id)
            from nbconvert.preprocessors import ExecutePreprocessor
            ExecutePreprocessor(timeout=120, kernel_name="python3").preprocess(nb, {"metadata": {"path": folder}})
            nbformat.write(nb, base + ".ipynb")
    return stale


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python exercises/make_exercises.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a stub or notebook is out of date")
    parser.add_argument("--execute", action="store_true", help="re-run every notebook, changed or not")
    parser.add_argument("--root", default=ROOT, help="the repository (default: this checkout)")
    args = parser.parse_args(argv)
    stale = generate(args.root, check_only=args.check, execute=args.execute)
    for path in stale:
        print(("out of date: " if args.check else "wrote: ") + os.path.relpath(path, args.root))
    if args.check and stale:
        print("run `python exercises/make_exercises.py` to regenerate", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
