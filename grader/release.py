"""Write the exercises as learners get them: statements, stubs and notebooks, never a solution.

    python -m specdec.grade release OUT/

Copies, for each exercises/exNN_name/ of the course repository, its README.md
(the statement), exNN_name.py (the stub) and exNN_name.ipynb (the notebook),
plus an index. `solution.py` is never copied, and the release refuses to
finish if any file it wrote holds a solution block. OUT must be new or empty.

    >>> [os.path.basename(f) for f in exercise_folders()][:2]
    ['ex01_verify', 'ex02_softmax']
"""

import glob
import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
INDEX = """# Exercises

Each folder holds a statement (`README.md`), a stub to fill in (`exNN_name.py`) and the same stub as a
notebook (`exNN_name.ipynb`). Write the function, then check yourself: in the notebook, run the check cell;
in a terminal, `python -m specdec.grade exNN_name.py`. Hand in the one file you worked in.

{rows}
"""


def exercise_folders(root=ROOT):
    """The exercises/exNN_name folders of the course repository, or ValueError if there are none."""
    folders = sorted(glob.glob(os.path.join(root, "exercises", "ex[0-9][0-9]_*")))
    if not folders:
        raise ValueError(f"no exercises/ex*_* folders under {root}: release needs the course repository")
    return folders


def release(out, root=ROOT):
    """Write the learners' copy of every exercise into `out`; return the paths written."""
    if os.path.exists(out) and os.listdir(out):
        raise ValueError(f"{out} is not empty: release into a new folder")
    written, rows = [], []
    for folder in exercise_folders(root):
        name = os.path.basename(folder)
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for file in ("README.md", f"{name}.py", f"{name}.ipynb"):
            source = os.path.join(folder, file)
            if not os.path.exists(source):
                raise ValueError(f"{source} is missing: regenerate the exercises (exercises/make_exercises.py)")
            written.append(shutil.copyfile(source, os.path.join(out, name, file)))
        title = open(os.path.join(folder, "README.md"), encoding="utf-8").readline().lstrip("# ").strip()
        rows.append(f"- [{title}]({name}/README.md)")
    index = os.path.join(out, "README.md")
    with open(index, "w", encoding="utf-8") as f:
        f.write(INDEX.format(rows="\n".join(rows)))
    written.append(index)
    leaks = [p for p in written if any(m in open(p, encoding="utf-8").read() for m in MARKERS)]
    if leaks:
        raise ValueError(f"a solution block is in {leaks[0]}: the stubs are stale (run exercises/make_exercises.py)")
    return written
