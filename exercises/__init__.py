"""The course's exercises, one folder each, listed in the order the course meets them.

Each folder exNN_name/ holds what a learner reads and writes (README.md, the stub
exNN_name.py, the notebook exNN_name.ipynb), the course's solution (solution.py,
never released), and `grading.py`: its public cases, its kinds of hidden case, its
catalogue of known mistakes, ending in `EXERCISE = Exercise(...)`. `common/` holds
what several exercises' grading shares (rows, the result dict, sampler cases).
The grading engine (`grader/`) finds an exercise through the table below: adding
one is a new folder and one line here.

    >>> [name for name, _, _ in COURSE]
    ['ex02', 'ex01', 'ex03', 'ex04', 'ex05', 'ex06']
"""

# (name, folder, the lesson it follows), in course order.
COURSE = (
    ("ex02", "ex02_softmax", "01"),
    ("ex01", "ex01_verify", "03"),
    ("ex03", "ex03_residual", "03"),
    ("ex04", "ex04_sampler", "05"),
    ("ex05", "ex05_speedup", "06"),
    ("ex06", "ex06_block", "10"),
)
