"""Run a case in this process, through the same worker code and the same validation as the sandbox.

Two callers, both on code that is not hostile: `check()` (a learner's own
function in their own notebook) and the catalogue of known mistakes (the
grader's trusted wrong implementations, used by `diagnose.py`). The reply makes
the same trip as a sandboxed one (worker.run_request -> JSON -> protocol),
so a value judged here is judged exactly as it would be from the sandbox
(minus the JSON text in between: `worker.to_plain` already made it plain).

    >>> from .registry import exercise
    >>> case = exercise("ex02").cases(0)[0]
    >>> from exercises.ex02_softmax.solution import softmax
    >>> case.judge(run_case({"softmax": softmax}, case))
    (True, '')
"""

import json
import random
import sys

from . import protocol, replay, worker

DISPLAY = "<your function>"


def run_case(functions, case, learner=False, echo=True):
    """The validated results of `case` for `functions` ({name: callable}), or a failure sentence.

    `learner`: let Ctrl-C through; `echo=False`: skip sending the arguments back
    (the catalogue of mistakes never modifies them). A statistical case's calls are
    replayed here too (`replay.IN_PROCESS` of them, shuffled), as the sandbox's are.
    """
    request = dict(case.request(0), echo_args=echo and case.echo_args)
    if echo:  # the learner's function gets its own copy of every input, as in the sandbox
        request = json.loads(json.dumps(request))
    saved = random.getstate()
    numpy = sys.modules.get("numpy")
    numpy_saved = numpy.random.get_state() if numpy is not None else None
    try:  # the worker seeds the global generators; a learner's session gets its state back after
        display = _display(functions)
        outcome = _checked(worker.run_request(functions, request, display, in_process=learner), request)
        if case.replay:
            planned = replay.plan([case.request(0)], [outcome], [True], replay.IN_PROCESS, fill=False, decoys=False)
            replay.attach([outcome], planned, [_checked(worker.run_request(functions, json.loads(json.dumps(r)),
                                                                          display, in_process=learner), r)
                                               for r, _ in planned])
    finally:
        random.setstate(saved)
        if numpy_saved is not None:
            numpy.random.set_state(numpy_saved)
    return outcome


def _checked(reply, request):
    try:
        return protocol.check_reply(reply, request)
    except protocol.ProtocolError as exc:
        return {"failure": f"the result could not be sent back: {exc}"}


def _display(functions):
    """The file name the traceback shows for the learner's function (its code object's own)."""
    for fn in functions.values():
        code = getattr(fn, "__code__", None)
        if code is not None:
            return code.co_filename
    return DISPLAY
