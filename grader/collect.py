"""A class's submissions as an LMS delivers them: one entry per student, whatever the folder holds.

A batch folder may hold, side by side:
- `.py` and `.ipynb` files (one per student: `ex01_alice.py`);
- one folder per student (the submission is the one `.py`/`.ipynb` inside; Moodle's bulk download
  unpacks to `Full Name_123456_assignsubmission_file_/ex01.py`);
- `.zip` files: an LMS bulk download (Canvas: `lastnamefirstname_12345_67890_ex01.py` members, or
  `..._LATE_...`; Moodle: one folder per student, as above) or one student's own zip;
and anything else (a `.txt`, a link, a FIFO), which gets an entry saying why it is not graded. Every
entry in the folder leads to at least one row: nothing is skipped in silence but hidden names
(`.x`) and the tools' own folders (`__pycache__`, a Mac zip's `__MACOSX`).

The student id comes from the entry's name: Canvas's and Moodle's naming conventions are recognised
(`STUDENT_PATTERNS`), else it is the name without its extension (a folder's name, for a folder); an
instructor with another convention passes a regular expression whose group `student` is the id
(`--student-pattern`, as nbgrader's zip_collect takes one).

Zip files are hostile input: members are read with limits (count, total size, ratio), never by
their own paths (no `../`, no absolute path, no link is followed), into a private folder.

    >>> student_of("smithjohn_LATE_12345_67890_ex01_verify.py"), student_of("Jo Doe_4711_assignsubmission_file_")
    ('12345', '4711')
    >>> student_of("ex01_alice.py"), student_of("notes", r"(?P<student>\\w+)")
    ('ex01_alice', 'notes')
"""

import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass

SUFFIXES = (".py", ".ipynb")
# Canvas: "lastnamefirstname[_LATE]_<user id>_<attachment id>_<file name>"; Moodle's bulk download:
# "<Full Name>_<participant id>_assignsubmission_file[_]" (a folder, or a member's leading folder).
STUDENT_PATTERNS = (r"^[^_/]+(?:_LATE)?_(?P<student>\d+)_\d+_",
                    r"^[^/]*?_(?P<student>\d+)_assign(?:submission|feedback)_")
MAX_MEMBERS = 2000               # per zip file
MAX_UNPACKED = 64 * 1024 ** 2    # bytes unpacked per zip file
MAX_RATIO = 200                  # a member may not unpack to more than 200 times its compressed size
MAX_DEPTH = 2                    # a zip inside a zip is opened, one level deeper is not


@dataclass
class Entry:
    student: str                 # the id the gradebook keys on
    name: str                    # what the entry was called in the folder (or "archive.zip: member")
    path: str = ""               # the file to grade; "" when there is none
    problem: str = ""            # why it is not graded (then path is "")


def student_of(name, pattern=None):
    """The student id in an entry's name: `pattern`'s group `student`, a known LMS convention, or the stem."""
    base = os.path.basename(name.rstrip("/"))
    for regex in ([pattern] if pattern else []) + list(STUDENT_PATTERNS):
        match = re.search(regex, name) or re.search(regex, base)
        if match and match.groupdict().get("student"):
            return match.group("student")
    stem, ext = os.path.splitext(base)
    return stem if 1 < len(ext) <= 6 else base


def check_pattern(pattern):
    """`pattern` compiled, or ValueError: it must be a regular expression with a group named `student`."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"--student-pattern {pattern!r} is not a regular expression: {exc}") from None
    if "student" not in compiled.groupindex:
        raise ValueError(f"--student-pattern {pattern!r} has no group (?P<student>...) for the student id")
    return compiled


def collect(folder, work, pattern=None):
    """Every entry of `folder` as Entries, in name order; zip members are unpacked under `work` (a new folder)."""
    entries = []
    for name in sorted(os.listdir(folder)):
        if not name.startswith((".", "__")):   # hidden files, __pycache__, a Mac zip's __MACOSX: not entries
            entries += _entry(os.path.join(folder, name), name, work, pattern, 0)
    return entries


def _entry(path, name, work, pattern, depth):
    student = student_of(name, pattern)
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return [Entry(student, name, problem=f"cannot read it: {exc.strerror or exc}")]
    if stat.S_ISLNK(mode):
        return [Entry(student, name, problem="a symbolic link, not a file: refused (hand in the file itself)")]
    if stat.S_ISDIR(mode):
        return _folder(path, name, student, work, pattern, depth)
    if not stat.S_ISREG(mode):
        return [Entry(student, name, problem="not a regular file (a FIFO or a device): refused")]
    if name.lower().endswith(SUFFIXES):
        return [Entry(student, name, path)]
    if name.lower().endswith(".zip") and depth < MAX_DEPTH:
        return _zip(path, name, work, pattern, depth)
    kind = os.path.splitext(name)[1] or "a file without an extension"
    return [Entry(student, name, problem=f"not a .py or .ipynb submission ({kind}): not graded")]


def _folder(path, name, student, work, pattern, depth):
    """A student's folder: the one submission in it (searched two levels down), or why there is none."""
    found = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and root.count(os.sep) - path.count(os.sep) < 2)
        found += [os.path.join(root, f) for f in sorted(files) if f.lower().endswith(SUFFIXES + (".zip",))
                  and not f.startswith(".")]
    if not found:
        return [Entry(student, name, problem="a folder with no .py or .ipynb file in it: nothing to grade")]
    if len(found) > 1:
        shown = ", ".join(os.path.relpath(f, path) for f in found[:5]) + (" ..." if len(found) > 5 else "")
        return [Entry(student, name, problem=f"a folder with {len(found)} candidate files ({shown}): hand in one")]
    inner = os.path.relpath(found[0], os.path.dirname(path))
    entries = _entry(found[0], inner, work, pattern, depth)
    for e in entries:
        e.student = student
    return entries


def _zip(path, name, work, pattern, depth):
    """A zip file: a bulk download (one entry per student in it) or one student's own archive."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if len(members) > MAX_MEMBERS:
                raise ValueError(f"{len(members)} members (at most {MAX_MEMBERS})")
            total = sum(m.file_size for m in members)
            if total > MAX_UNPACKED:
                raise ValueError(f"it unpacks to {total} bytes (at most {MAX_UNPACKED})")
            if any(m.file_size > MAX_RATIO * max(m.compress_size, 1) + 4096 for m in members):
                raise ValueError("a member unpacks to far more than its compressed size (a zip bomb?)")
            out = _unpack(archive, members, tempfile.mkdtemp(prefix="zip-", dir=work))
    except (zipfile.BadZipFile, ValueError, OSError, RuntimeError, NotImplementedError) as exc:
        return [Entry(student_of(name, pattern), name, problem=f"a zip file that cannot be opened safely: {exc}")]
    tops = sorted(n for n in os.listdir(out) if not n.startswith((".", "__MACOSX")))
    if not tops:
        return [Entry(student_of(name, pattern), name, problem="an empty zip file: nothing to grade")]
    if not any(_names_student(t, pattern) for t in tops):  # one student's own archive: like their folder
        entries = _folder(out, name, student_of(name, pattern), work, pattern, depth + 1)
        for e in entries:
            e.name = f"{name}: {os.path.basename(e.name)}" if e.path else name
        return entries
    entries = []
    for top in tops:
        for e in _entry(os.path.join(out, top), top, work, pattern, depth + 1):
            e.name = f"{name}: {e.name}"
            entries.append(e)
    return entries


def _names_student(name, pattern):
    """Whether `name` follows the LMS's (or the instructor's) naming of a student's entry."""
    return any(re.search(regex, name) for regex in ([pattern] if pattern else []) + list(STUDENT_PATTERNS))


def _unpack(archive, members, out):
    """Write the archive's regular members under `out`, by sanitised names; links and specials are dropped."""
    for i, member in enumerate(members):
        kind = (member.external_attr >> 16) & 0o170000
        if member.is_dir() or kind not in (0, stat.S_IFREG):
            continue                                       # a symlink or device entry is never created
        parts = [p for p in re.split(r"[\\/]+", member.filename) if p not in ("", ".", "..")]
        if not parts:
            continue
        parts = [_safe(p) for p in parts]
        target = os.path.join(out, *parts)
        if os.path.exists(target):
            target += f".{i}"
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with archive.open(member) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1024 * 1024)
    return out


def _safe(part):
    """A path component with no control characters, at most 200 characters (the rest is kept as shown)."""
    part = "".join("_" if ord(c) < 32 or c in "\x7f" else c for c in part)
    return part[:200] or "_"
