"""check(): grade a function in place, in the learner's own notebook or session.

Runs the exercise's cases (public, and one of each hidden kind), in this process (it is the
learner's own code: no sandbox, no time limit; Ctrl-C interrupts it) and
returns the Report, which Jupyter shows as a table (`Report._repr_html_`).
Outside Jupyter it also prints the text table. The plain-Python bonus is
left to the command-line grader, which runs the file in a sandbox without NumPy.

    >>> from exercises.ex02_softmax.solution import softmax
    >>> check(softmax, exercise="ex02", quiet=True).status
    'passed'
"""

import sys

from . import inprocess, verdict
from .notebook import localize
from .registry import exercise as get_exercise, exercise_for


def _in_jupyter():
    shell = sys.modules.get("IPython")
    ip = getattr(shell, "get_ipython", lambda: None)() if shell is not None else None
    # A real shell only: a notebook's script (notebook.PRELUDE) puts a stand-in get_ipython in sys.modules too.
    return ip is not None and type(ip).__module__.split(".")[0] in ("IPython", "ipykernel")


def _cell_label(filename):
    """'In[5]' for a file name IPython gave the code of the cell it ran fifth, else None."""
    shell = sys.modules.get("IPython")
    ip = getattr(shell, "get_ipython", lambda: None)() if shell is not None and _in_jupyter() else None
    try:
        label = ip.compile.format_code_name(filename) if ip is not None else None
    except Exception:   # another IPython: its own way of naming cells, or none
        return None
    return label[1] if isinstance(label, tuple) and len(label) == 2 and isinstance(label[1], str) else None


def _in_cells(outcomes, filename):
    """Place the exceptions raised in a live session's cell as 'cell In[5], line 2' (in place)."""
    label = _cell_label(filename)
    if label is None:
        return
    for outcome in outcomes:
        for result in (outcome or {}).get("results", []):
            for key in ("raised", "unconvertible"):
                info = result.get(key)
                if info and isinstance(info.get("line"), int) and "where" not in info:
                    info["where"] = f"cell {label}, line {info['line']}"


def check(*functions, exercise=None, quiet=None, seed=0, cases=None, key=None, where=None):
    """Grade `functions` (defined anywhere, a notebook cell included) on `exercise`; return the Report.

    With one function and one expected name, the function's own name does not
    matter; with several (ex05), they are matched by name, and any not passed
    are taken from the namespace the first one was defined in. `exercise`
    defaults to the one whose function has the first argument's name.
    `quiet=None` prints the table except in Jupyter, where the returned Report
    displays itself. `cases`: run these instead of the exercise's cases for `seed` (the practice ones),
    `key` naming them for the diagnosis's cache (`diagnose.signatures`). `where`: the line -> (cell, line) map
    of the notebook the functions were read from (`notebook.notebook_to_script`), so that an exception's place
    reads "cell 3, line 2" (the practice checker on a notebook); in a live Jupyter session, a function defined
    in a cell is placed as "cell In[5], line 2", the cell's execution count as Jupyter shows it beside the cell.
    """
    if not functions:
        raise TypeError("check() needs the function to grade, e.g. check(verify_speculative_tokens)")
    ex = get_exercise(exercise) if exercise else exercise_for(getattr(functions[0], "__name__", ""))
    if ex is None:
        raise ValueError("cannot tell which exercise this is: pass exercise='ex01' (or ex02 ... ex06)")
    if len(functions) == 1 and len(ex.functions) == 1:
        table = {ex.functions[0]: functions[0]}
    else:
        table = {getattr(f, "__name__", ""): f for f in functions}
        # ex05 has two functions; check(acceptance_rate) finds its sibling where it was defined (the notebook).
        scope = getattr(functions[0], "__globals__", {})
        table.update({n: scope[n] for n in ex.functions if n not in table and callable(scope.get(n))})
        missing = [n for n in ex.functions if n not in table]
        if missing:
            raise ValueError(f"{ex.name} needs {', '.join(ex.functions)}; missing {', '.join(missing)}")
    cases = ex.cases(seed) if cases is None else tuple(cases)
    outcomes = [inprocess.run_case(table, case, learner=True) for case in cases]
    if where:
        localize(outcomes, where)
    else:
        _in_cells(outcomes, inprocess._display(table))
    report = verdict.build(ex, seed, cases, outcomes, sandbox="in-process", key=key)
    if ex.bonus:
        report.bonus_note = (f"plain-Python bonus (+{ex.bonus}): decided by the grader, which runs your file in a "
                             "sandbox without NumPy")
    if quiet is False or (quiet is None and not _in_jupyter()):
        print(report.table())
    return report
