"""Keep pytest away from the fixture submissions: they are graded, never imported.

Under `--doctest-modules` pytest would import every .py file here, and some of
them loop forever, fork or call os._exit at import by design (see test_grading_hostile.py).
"""

collect_ignore_glob = ["*.py", "*/*.py", "*/*.ipynb"]
