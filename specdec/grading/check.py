"""check(): grade a function in place, in the learner's own notebook or session.

Runs the same cases as `python -m specdec.grade`, in this process (it is the
learner's own code: no isolation, no time limit), prints the table and
returns the Report. The plain-Python bonus is left to the command-line
grader, which can tell whether NumPy gets imported in a fresh process.

    >>> from specdec import softmax
    >>> check(softmax, exercise="ex02", quiet=True).status
    'passed'
"""

import copy

from .cases import exercise as get_exercise, exercise_for
from .child import run_case
from .report import build_report


def check(*functions, exercise=None, quiet=False):
    """Grade `functions` (defined anywhere, a notebook cell included) on `exercise`.

    With one function and one expected name, the function's own name does not
    matter; with several (ex05), they are matched by name, and any not passed
    are taken from the namespace the first one was defined in. `exercise` defaults
    to the one whose function has the same name as the first argument.
    """
    if not functions:
        raise TypeError("check() needs the function to grade, e.g. check(verify_speculative_tokens)")
    if exercise is None:
        found = exercise_for(getattr(functions[0], "__name__", ""))
        if found is None:
            raise ValueError("cannot tell which exercise this is: pass exercise='ex01' (or ex02 ... ex05)")
        ex = found
    else:
        ex = get_exercise(exercise)
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
    messages = []
    for index, case in enumerate(ex.cases):
        job = copy.deepcopy(case.to_job(index))  # the learner's function may mutate its inputs
        job["in_process"] = True                  # let Ctrl-C interrupt a loop
        messages.append(run_case(table, job))
    report = build_report(ex, messages, plain_python=None, source="")
    if not quiet:
        print(report.table())
    return report
