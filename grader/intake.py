"""Every upload, through every door, as plain regular files in a private folder, within bounds.

The doors: one file (`python -m specdec.grade FILE`), a class (`--batch DIR`, or `--batch DOWNLOAD.zip`, the
zip an LMS gives), Gradescope's /autograder/submission (`gradescope.run`) and exported submissions (`similar`).
Each reads its input here, and nothing else of the grader opens a learner's path.

An **upload** is one student's: one entry of the class folder or of the LMS's zip (a file, a folder, a zip;
folders and zips inside it are opened too, MAX_DEPTH levels down). Whatever is inside an upload belongs to
its owner, whatever its names say: the student id comes from the name the LMS gave the upload, never from a
name inside it (issue 24: a zip whose members were named like a classmate's entries planted rows for that
classmate). `identity()` reads that name: Canvas (`lastnamefirstname[_LATE]_<user id>_<attachment>_<file>`),
Moodle (`Full Name_<participant id>_assignsubmission_file_`), Gradescope's export (`submission_<id>`, with
`submission_metadata.yml` beside them), an instructor's `--student-pattern`, else the name without its
extension. Ids are shown escaped (`report.label`): two names never become one id.

Read as untrusted bytes:
- no link is ever followed: folders are walked through their descriptors with O_NOFOLLOW, so a link (or a
  link swapped in during the walk) is listed as refused and never opened, as are FIFOs, devices and sockets;
  an archive's links and devices are never created;
- names are only shown (escaped), never used as paths: a file is copied under a fresh name in `work`;
- sizes are counted as the bytes arrive, not as an archive declares them, against the bounds below, **per
  upload and per batch**, over every level of nesting; each refusal is said in the upload's row.

    >>> identity("smithjohn_LATE_12345_67890_ex01_verify.py")
    ('12345', 'smithjohn', 'canvas', True, (67890,))
    >>> identity("Jo Doe_4711_assignsubmission_file_")[:3], identity("ex01_alice.py")[:3]
    (('4711', 'Jo Doe', 'moodle'), ('ex01_alice', '', 'plain'))
"""

import datetime
import io
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field

from .report import label

SUFFIXES = (".py", ".ipynb")
MiB = 1024 ** 2
MAX_UPLOAD_BYTES = 32 * MiB      # unpacked, over every level of one upload (a notebook may hold 32 MiB)
MAX_UPLOAD_ENTRIES = 500         # files, folders and archive members looked at in one upload, at every level
MAX_DEPTH = 3                    # folders and zips inside an upload, one in another
MAX_RATIO = 200                  # an archive member may not unpack to more than 200 times its compressed size
MAX_BATCH_BYTES = 4 * 1024 * MiB  # unpacked, over a whole batch
MAX_UPLOADS = 5000               # uploads in one batch

SKIPPED = ("__MACOSX", "__pycache__", ".ipynb_checkpoints")   # the tools' own folders: not a learner's
CANVAS = re.compile(r"^(?P<name>[^_/]+?)(?P<late>_LATE)?_(?P<student>\d+)_(?P<order>\d+)_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>[^/]*?)_(?P<student>\d+)_assign(?:submission|feedback)_")
GRADESCOPE = re.compile(r"^submission_(?P<student>\d+)$")


@dataclass
class File:
    """A .py or .ipynb file of an upload, copied to `path` (a private copy under a fresh name)."""
    name: str                    # where it was in the upload, escaped (report.label)
    path: str
    mtime: float = 0.0
    size: int = 0


@dataclass
class Upload:
    """One student's upload: what it holds that can be graded, and what it holds that cannot (with why)."""
    student: str                 # the id, escaped (report.label); the gradebook's key
    name: str                    # the upload's own name in the class folder or the LMS's zip, escaped
    person: str = ""             # the LMS's own name for the student (Canvas's sortable name, Moodle's full name)
    lms: str = "plain"           # canvas, moodle, gradescope, pattern, plain
    late: bool = False           # the LMS marked it late (Canvas's _LATE_)
    order: tuple = ()            # how recent it is, from the LMS (Canvas's attachment id), else ()
    submitted: float = 0.0       # when, if known (Gradescope's created_at, else the newest file's time)
    score: str = ""              # what an export says it scored (Gradescope's :score:), if it says
    files: list = field(default_factory=list)    # Files
    others: list = field(default_factory=list)   # (name, why it is not graded)
    problem: str = ""            # why the upload as a whole cannot be read ("" when it could)

    @property
    def recency(self):
        """A sort key: the LMS's order where it has one, else when it was submitted, else its name."""
        return (self.order, self.submitted, self.name)


class Refused(Exception):
    """An upload (or the batch) went over a bound: the row says this sentence."""


class Budget:
    """What is left of one upload's bounds, and of the batch's (shared by every upload of a batch)."""

    def __init__(self, batch=None):
        self.bytes, self.entries, self.batch = MAX_UPLOAD_BYTES, MAX_UPLOAD_ENTRIES, batch

    def entry(self):
        self.entries -= 1
        if self.entries < 0:
            raise Refused(f"it holds more than {MAX_UPLOAD_ENTRIES} files and folders (archives included)")

    def take(self, n):
        self.bytes -= n
        if self.bytes < 0:
            raise Refused(f"it unpacks to more than {MAX_UPLOAD_BYTES / MiB:g} MiB (archives inside it included)")
        if self.batch is not None:
            self.batch[0] -= n
            if self.batch[0] < 0:
                raise Refused(f"the batch unpacks to more than {MAX_BATCH_BYTES / MiB:g} MiB: split it")


def identity(name, pattern=None):
    """(student id, the LMS's name for them, lms, late, order) from the name an upload was given.

    Only ever called on the name of an upload (an entry of the class folder or of the LMS's zip): a name inside
    an upload says nothing of who handed it in.
    """
    base = name.rstrip("/")
    if pattern:
        match = re.search(pattern, base)
        if match and match.groupdict().get("student"):
            found = match.groupdict()
            return match.group("student"), found.get("name") or "", "pattern", bool(found.get("late")), ()
    match = CANVAS.match(base)
    if match:
        return match["student"], match["name"], "canvas", bool(match["late"]), (int(match["order"]),)
    match = MOODLE.match(base)
    if match:
        return match["student"], match["name"], "moodle", False, ()
    match = GRADESCOPE.match(base)
    if match:
        return match["student"], "", "gradescope", False, (int(match["student"]),)
    stem, ext = os.path.splitext(base)
    return (stem if 1 < len(ext) <= 6 else base), "", "plain", False, ()


# ---- a tree of entries, from a folder (through descriptors) or from a zip (through its members) -------------------
class _Entry:
    """One entry of a folder or an archive: kind is "dir", "file", "link" or "special"."""

    def __init__(self, name, kind, mtime=0.0, size=0):
        self.name, self.kind, self.mtime, self.size = name, kind, mtime, size

    def children(self):
        return []

    def close(self):
        """Let go of what `children()` opened."""

    def read(self, budget):
        raise Refused("not a file")


class _FsEntry(_Entry):
    """An entry of a folder on disk, opened relative to its parent's descriptor, never through a link."""

    def __init__(self, parent_fd, name, st):
        kind = "link" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else \
            "file" if stat.S_ISREG(st.st_mode) else "special"
        super().__init__(name, kind, st.st_mtime, st.st_size)
        self.parent_fd = parent_fd

    def _open(self, flags):
        return os.open(self.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=self.parent_fd)

    def children(self):
        self.fd = self._open(os.O_RDONLY | os.O_DIRECTORY)
        return _folder_entries(self.fd)

    def close(self):
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None

    def read(self, budget):
        fd = self._open(os.O_RDONLY)
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):   # swapped for something else since it was listed
                raise Refused("not a regular file")
            return _counted(f.read, budget)


def _folder_entries(fd):
    """The entries of the folder open at `fd` (which is kept open for them), sorted by name."""
    names = sorted(os.listdir(fd))
    out = []
    for name in names:
        try:
            out.append(_FsEntry(fd, name, os.stat(name, dir_fd=fd, follow_symlinks=False)))
        except OSError:
            out.append(_Entry(name, "special"))
    return out


class _ZipEntry(_Entry):
    """A member of a zip (or a folder implied by members' paths)."""

    def __init__(self, archive, name, info=None):
        kind = "dir"
        if info is not None:
            mode = (info.external_attr >> 16) & 0o170000
            kind = "link" if mode == stat.S_IFLNK else "file" if mode in (0, stat.S_IFREG) else "special"
        mtime = 0.0
        if info is not None:
            try:
                mtime = datetime.datetime(*info.date_time).timestamp()
            except (ValueError, OverflowError):
                pass
        super().__init__(name, kind, mtime, info.file_size if info is not None else 0)
        self.archive, self.info, self.kids = archive, info, {}

    def children(self):
        return [self.kids[n] for n in sorted(self.kids)]

    def read(self, budget):
        info = self.info
        if info.file_size > MAX_RATIO * max(info.compress_size, 1) + 4096:
            raise Refused(f"{label(self.name)} unpacks to far more than its compressed size (a zip bomb?)")
        try:
            with self.archive.open(info) as f:
                return _counted(f.read, budget, declared=info.file_size)
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as exc:
            raise Refused(f"{label(self.name)} cannot be read from its archive: {exc}") from None


def _zip_root(source, most=MAX_UPLOAD_ENTRIES):
    """The members of the zip `source` (bytes, or a file open for reading) as a tree of _ZipEntry (paths split at
    / and \\, never used as paths); Refused for a zip of more than `most` members, counted before they are read."""
    stream = io.BytesIO(source) if isinstance(source, bytes) else source
    try:
        end = zipfile._EndRecData(stream)   # the member count, before the central directory is parsed
        if end and end[zipfile._ECD_ENTRIES_TOTAL] > most:
            raise Refused(f"a zip of {end[zipfile._ECD_ENTRIES_TOTAL]} members: more than the {most} an upload may "
                          "hold")
        archive = zipfile.ZipFile(stream)
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, RuntimeError, NotImplementedError, EOFError,
            AttributeError) as exc:
        raise Refused(f"a zip file that cannot be opened: {exc}") from None
    if len(infos) > most:
        raise Refused(f"a zip of {len(infos)} members: more than the {most} an upload may hold")
    root = _ZipEntry(archive, "")
    for info in infos:
        parts = [p for p in re.split(r"[\\/]+", info.filename) if p not in ("", ".", "..")]
        if not parts:
            continue
        node = root
        for part in parts[:-1]:
            node = node.kids.setdefault(part, _ZipEntry(archive, part))
        if info.is_dir():
            node.kids.setdefault(parts[-1], _ZipEntry(archive, parts[-1]))
        elif parts[-1] not in node.kids:    # a second member of the same name: the first one counts
            node.kids[parts[-1]] = _ZipEntry(archive, parts[-1], info)
    return root


def _counted(read, budget, declared=None):
    """All the bytes `read` gives, taken from `budget` as they arrive (an archive's declared size is not trusted)."""
    chunks = []
    while True:
        chunk = read(1024 * 1024)
        if not chunk:
            return b"".join(chunks)
        budget.take(len(chunk))
        if declared is not None and sum(map(len, chunks)) + len(chunk) > declared:
            raise Refused("an archive member larger than it says it is")
        chunks.append(chunk)


def _hidden(name):
    return name.startswith(".") or name in SKIPPED


# ---- one upload ---------------------------------------------------------------------------------------------------
class _Reader:
    """Walks one upload, copying its .py and .ipynb files into `work`."""

    def __init__(self, upload, work, budget):
        self.upload, self.work, self.budget, self.count = upload, work, budget, 0

    def walk(self, entry, shown, depth):
        """Copy what `entry` holds; `depth`: how many folders and archives it is inside, in the upload."""
        self.budget.entry()
        inside = (lambda child: f"{shown}/{child}" if shown else child) if entry.kind == "dir" else \
            (lambda child: f"{shown}: {child}")
        if entry.kind == "link":
            self.upload.others.append((shown, "a symbolic link: refused, never followed (hand in the file itself)"))
        elif entry.kind == "special":
            self.upload.others.append((shown, "not a regular file (a FIFO, device or socket): refused"))
        elif entry.kind == "dir" or entry.name.lower().endswith(".zip"):
            if depth >= MAX_DEPTH:
                self.upload.others.append((shown, f"more than {MAX_DEPTH} folders or archives deep: not opened"))
                return
            try:
                children = entry.children() if entry.kind == "dir" else _zip_root(entry.read(self.budget)).children()
                for child in children:
                    if not _hidden(child.name):
                        self.walk(child, inside(child.name), depth + 1)
            except Refused as exc:
                if self.budget.bytes < 0 or self.budget.entries < 0 or (self.budget.batch or [1])[0] < 0:
                    raise   # a bound of the upload: the upload's row says so
                self.upload.others.append((shown, str(exc)))
            finally:
                entry.close()
        elif entry.name.lower().endswith(SUFFIXES):
            data = entry.read(self.budget)
            self.count += 1
            path = os.path.join(self.work, f"f{self.count}{os.path.splitext(entry.name)[1].lower()}")
            with open(path, "wb") as f:
                f.write(data)
            self.upload.files.append(File(label(shown), path, entry.mtime, len(data)))
        else:
            kind = os.path.splitext(entry.name)[1] or "a file without an extension"
            self.upload.others.append((shown, f"not a .py or .ipynb file ({kind}): not graded"))


def _read_upload(entry, work, budget, pattern=None, metadata=None):
    """The Upload of one entry (a file, a folder or a zip), its files copied under `work` (a new folder)."""
    student, person, lms, late, order = identity(entry.name, pattern)
    meta = (metadata or {}).get(entry.name, {})
    upload = Upload(label(meta.get("sid") or meta.get("email") or student), label(entry.name),
                    label(meta.get("name", person)), lms, late, order)
    os.makedirs(work, exist_ok=True)
    try:
        # The upload itself: a folder is opened (its own contents are the upload's), a file is read as one.
        _Reader(upload, work, budget).walk(entry, "" if entry.kind == "dir" else entry.name, 0)
    except Refused as exc:   # a bound of the upload or the batch: none of it is graded
        upload.problem, upload.files = f"not graded: {exc}", []
    except OSError as exc:
        upload.problem, upload.files = f"cannot read it: {exc.strerror or exc}", []
    times = [f.mtime for f in upload.files]
    upload.submitted = meta.get("created", 0.0) or (max(times) if times else entry.mtime)
    upload.score = label(meta.get("score", ""))
    if not upload.problem and not upload.files:
        reasons = [why for _, why in upload.others]
        upload.problem = reasons[0] if len(reasons) == 1 and entry.kind != "dir" else \
            "nothing to grade: no .py or .ipynb file in it" + (f" ({len(reasons)} other entries)" if reasons else "")
    return upload


def read_path(path, work, pattern=None):
    """One upload given by its path (the single-file door, Gradescope's folder): an Upload, never an exception.

    The path itself may be a link the caller made (a learner's own file): it is refused all the same, as every
    link inside an upload is. Gradescope's /autograder/submission folder is read as one upload whose id is
    "submission".
    """
    parent, name = os.path.split(os.path.abspath(path))
    try:
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return Upload(label(name), label(name), problem=f"cannot read it: {exc.strerror or exc}")
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        entry = _FsEntry(fd, name, st)
        return _read_upload(entry, os.path.join(work, "u1"), Budget(), pattern)
    except OSError as exc:
        return Upload(label(name), label(name), problem=f"cannot read it: {exc.strerror or exc}")
    finally:
        os.close(fd)


def read_batch(source, work, pattern=None):
    """Every upload of a class, in name order: `source` is the class folder or the LMS's zip download.

    Each entry of the folder (or each top-level entry of the zip) is one upload. A zip in a class folder is one
    student's upload, however its members are named; the LMS's own download is graded as `--batch THE.zip`
    (or unpacked into the folder). A Gradescope export (submission_<id> folders beside submission_metadata.yml)
    takes its names and times from the metadata.
    """
    batch = [MAX_BATCH_BYTES]
    fds = []
    try:
        if os.path.isdir(source):
            fd = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            fds.append(fd)
            entries = _folder_entries(fd)
        else:   # the LMS's download, read in place (its members are counted against each upload's bounds)
            stream = open(source, "rb")
            fds.append(stream)
            entries = _zip_root(stream, MAX_UPLOADS * 20).children()
        entries = [e for e in entries if not _hidden(e.name)]
        metadata = _gradescope_metadata(entries, Budget(batch))
        uploads = []
        for n, entry in enumerate(e for e in entries if e.name != "submission_metadata.yml"):
            if n >= MAX_UPLOADS:
                uploads.append(Upload(label(entry.name), label(entry.name), problem=f"not graded: the batch holds "
                                      f"more than {MAX_UPLOADS} uploads: split it"))
                continue
            upload = _read_upload(entry, os.path.join(work, f"u{n + 1}"), Budget(batch), pattern, metadata)
            uploads.append(upload)
        return uploads
    finally:
        for fd in fds:
            fd.close() if hasattr(fd, "close") else os.close(fd)


def _gradescope_metadata(entries, budget):
    """{folder name: {"name", "sid", "email", "created"}} from a Gradescope export's submission_metadata.yml.

    Read line by line for the few keys it needs (a YAML parser is not a dependency): `submission_<id>:` at the
    start of a line opens a submission, `:name:`, `:sid:`, `:email:` and `:created_at:` inside it fill it.
    """
    entry = next((e for e in entries if e.name == "submission_metadata.yml" and e.kind == "file"), None)
    if entry is None:
        return {}
    try:
        text = entry.read(budget).decode("utf-8", errors="replace")
    except (Refused, OSError):
        return {}
    out, current = {}, None
    for line in text.splitlines():
        key = re.match(r"^(submission_\d+):\s*$", line)
        if key:
            current = out.setdefault(key.group(1), {})
            continue
        field_ = re.match(r"^\s*-?\s*:(name|sid|email|created_at|score):\s*(.*?)\s*$", line)
        if current is not None and field_:
            name, value = field_.group(1), field_.group(2).strip("'\"")
            if name == "created_at":
                current["created"] = _timestamp(value)
            elif value and name not in current:   # the first submitter of a group submission
                current[name] = value
    return out


def _timestamp(text):
    """Seconds since the epoch for Gradescope's `2026-11-01 10:00:00.000000000 -07:00`, else 0.0."""
    match = re.match(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.\d+)?\s*([+-]\d\d):?(\d\d)?", text)
    if not match:
        return 0.0
    try:
        when = datetime.datetime.fromisoformat(f"{match[1]}T{match[2]}{match[3]}:{match[4] or '00'}")
        return when.timestamp()
    except ValueError:
        return 0.0


# ---- which file of an upload is graded ------------------------------------------------------------------------
def exercise_of(name):
    """'ex01' from a name such as ex01_verify.py, alice-ex01.ipynb or 'hw.zip: ex01/x.py'; None if absent.

    >>> exercise_of("hw.zip: ex01_verify.py"), exercise_of("notes.py"), exercise_of("ex011.py")
    ('ex01', None, None)
    """
    match = re.search(r"(?<![a-z0-9])(ex\d\d)(?!\d)", name.lower())
    return match.group(1) if match else None


def choose(upload, exercise=None):
    """{exercise: (the File graded, [the upload's other files of that exercise])}: at most one file per exercise.

    The rule: the exercise is `exercise` when the command names one, else the one the file's own name gives,
    else the one the upload's name gives; of several files of one exercise, the one whose own name names the
    exercise, then the newest, then the first by name. A file whose exercise cannot be told is under None.
    """
    groups = {}
    for f in upload.files:
        name = exercise or exercise_of(os.path.basename(f.name)) or exercise_of(f.name) or exercise_of(upload.name)
        groups.setdefault(name, []).append(f)
    out = {}
    for name, files in groups.items():
        ranked = sorted(files, key=lambda f: (not exercise_of(os.path.basename(f.name)), -f.mtime, f.name))
        out[name] = (ranked[0], ranked[1:])
    return out
