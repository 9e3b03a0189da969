"""A grade as the learner and the instructor see it: a table, one JSON document, a CSV row, an HTML table.

Scoring rules (stated once, applied everywhere):
- a case earns its points only if it passes; no partial credit inside a case;
- a case fails if the function changed its inputs, even when its answer is right;
- a case passed by raising an exception (bad input -> ValueError) earns nothing when the
  function also raises on its twin, the same input without the fault: no points for raising
  everywhere, and an over-strict check costs only the cases it breaks; a public example earns
  nothing when its twin (the same example with its token ids renamed) fails: no points for a
  table of the examples' answers (`cases.twins`);
- the plain-Python bonus (ex01: +10, "a plain-Python solution earns 10 bonus points") is
  earned only by the run in a sandbox with no NumPy on its filesystem, and only by a
  solution: a file that passes every case there, public and hidden. All or nothing, as the
  problem states it;
- the table lists failures first and ends with `score: S/MAX` plus ` (+B bonus)`.

Every string a submission controls (exception messages, source lines) goes
through `clean()` before it reaches a terminal, the JSON, the CSV or the HTML (there, through
`html_text()`: escaped, with `code` spans as <code>):
control characters, ANSI escapes and line breaks become `?`, so a submission
cannot print a fake `score:` line or a second JSON document. A file name names
a learner, so it must also stay unambiguous: `label()` spells out what
`clean()` would drop or hide, and two files never share a row's name.

    >>> clean("ok\\x1b[2J\\nscore: 100/100")
    'ok?score: 100/100'
    >>> csv_cell("=HYPERLINK(1)")
    "'=HYPERLINK(1)"
    >>> label("ex01_ali\\x1b[0mce.py"), label(b"ex01_\\xff.py".decode(errors="surrogateescape"))
    ('ex01_ali\\\\x1b[0mce.py', 'ex01_\\\\xff.py')
"""

import html
import json
import re
import unicodedata
from dataclasses import dataclass, field

ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")


HIDDEN = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")  # control, format, surrogate, private, unassigned, breaks


def clean(text, limit=300):
    """One printable line: ANSI sequences dropped, other control and separator characters -> '?'."""
    text = ANSI.sub("", str(text))
    text = "".join("?" if unicodedata.category(ch) in HIDDEN else ch for ch in text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def label(name):
    """A file name made printable and unambiguous: what `clean()` would drop or hide is escaped, never
    dropped or shortened (ESC as \\x1b, a byte that is not UTF-8 as \\xff), and so are a backslash and
    a leading quote (the spreadsheet text marker `csv_cell` may add). A name that is not ASCII is
    followed by its ASCII spelling in brackets, so two names that look alike (a Cyrillic 'о' for a Latin
    'o', an accent composed or not) never look the same: `ex01_jos\xe9.py` shows as
    `ex01_josé.py [ex01_jos\xe9.py]`."""
    out = []
    for i, ch in enumerate(str(name)):
        if 0xDC80 <= ord(ch) <= 0xDCFF:  # a raw byte os.listdir kept (surrogateescape)
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ch == "'" and i == 0:
            out.append("\\x27")
        elif ch == "\\" or unicodedata.category(ch) in HIDDEN:
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    shown = "".join(out)
    return shown if shown.isascii() else f"{shown} [{shown.encode('ascii', 'backslashreplace').decode('ascii')}]"


def html_text(text, limit=300):
    """`clean(text)` for an HTML page: every character escaped, and each `code` span (the text between two
    backticks) shown as <code>code</code>; an unpaired backtick stays a backtick. The text may come from a
    hostile submission (an exception's message, a source line): nothing in it becomes markup but <code>.

    >>> html_text("line 3: `x = q[i] < 1` <b>")
    'line 3: <code>x = q[i] &lt; 1</code> &lt;b&gt;'
    >>> html_text("`<script>` and ` alone")
    '<code>&lt;script&gt;</code> and ` alone'
    """
    parts = clean(text, limit).split("`")
    if len(parts) % 2 == 0:   # an odd number of backticks: the last one opens no span
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return "".join(f"<code>{html.escape(part)}</code>" if i % 2 else html.escape(part)
                   for i, part in enumerate(parts))


def csv_cell(text, limit=300):
    """`clean()`, and never a cell a spreadsheet would run as a formula (= + - @ first)."""
    text = clean(text, limit)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


@dataclass
class CaseResult:
    name: str
    hidden: bool
    points: int
    passed: bool
    message: str = ""
    detail: list = field(default_factory=list)   # input / expected / got of a failed public case
    how: object = None             # how it failed: (exception type, line) if it raised, else the message

    @property
    def earned(self):
        return self.points if self.passed else 0


@dataclass
class Report:
    exercise: str
    title: str
    cases: list
    max_score: int
    bonus_points: int = 0          # what the exercise offers
    plain_python: object = None    # True / False, or None when not decided (in-process check)
    bonus_note: str = ""           # how the bonus was decided
    diagnosis: str = ""
    error: str = ""                # non-empty: the submission could not be graded
    source: str = ""
    sandbox: str = ""              # bwrap, process or in-process
    seed: int = 0                  # the instructor's secret: never shown, printed or sent (see lines, to_dict)
    grader_bug: bool = False
    student: str = ""              # the student id a batch found for the file's upload (intake.identity)
    person: str = ""               # the LMS's own name for the student (Canvas's sortable name, Moodle's full name)
    lms: str = ""                  # the LMS whose naming gave the id: canvas, moodle, gradescope, pattern, plain
    late: bool = False             # the counted upload was late (the LMS said so, or it came after --due)
    penalty: float = 0.0           # percent off a late row's total (--late-penalty)
    files: list = field(default_factory=list)   # every file the student handed in, and what became of it (batch)
    similar: str = ""              # the group of near-identical files this one belongs to (similar.py)
    fingerprint: tuple = ()        # its code's shape (similar.fingerprint), for the batch to compare
    notebook_note: str = ""        # where a notebook's Run All stopped: graded on the cells above it
    seconds: float = 0.0           # wall-clock time grading this file took
    cpu_seconds: float = 0.0       # CPU time its sandboxes used
    stopped: int = 0               # cases a limit of the submission's time stopped (session.Run.stopped)
    host: bool = False             # the machine could not run it (session.Run.host): not the file's doing
    regraded: bool = False         # graded a second time, alone, because of `stopped` or `host`

    @property
    def score(self):
        return sum(c.earned for c in self.cases)

    @property
    def bonus(self):
        """All the bonus points for a plain-Python run that passes every case, else 0 (see the rules above).

        Subtle: a bonus for any score above 0 gave a one-line constant answer 2/100 (+10 bonus), and one
        for the public cases alone gave a table of the three examples 30/100 (+10).
        """
        solved = bool(self.cases) and all(c.passed for c in self.cases)
        return self.bonus_points if self.bonus_points and self.plain_python is True and solved else 0

    @property
    def status(self):
        if self.error or self.grader_bug:
            return "error"
        return "passed" if all(c.passed for c in self.cases) else "failed"

    @property
    def final(self):
        """The total (score plus bonus) less a late row's penalty, rounded to 0.01; None when not graded.

        >>> r = Report("ex01", "t", [CaseResult("a", False, 10, True)], 10, late=True, penalty=25.0)
        >>> r.final, Report("ex01", "t", [], 10, error="no file").final
        (7.5, None)
        """
        if self.status == "error":
            return None
        total = (self.score + self.bonus) * (1 - (self.penalty if self.late else 0.0) / 100)
        return int(total) if total == int(total) else round(total, 2)

    @property
    def exit_code(self):
        return {"passed": 0, "failed": 1, "error": 2}[self.status]

    def score_line(self):
        return f"score: {self.score}/{self.max_score}" + (f" (+{self.bonus} bonus)" if self.bonus else "")

    def ordered(self):
        """Failures first, then passes, each in case order."""
        return [c for c in self.cases if not c.passed] + [c for c in self.cases if c.passed]

    def _uniform_failure(self):
        """What every case failed with, when they all failed the same way (a stub), else ''."""
        if any(c.passed for c in self.cases) or len(self.cases) < 4:
            return ""
        ways = {c.how for c in self.cases}
        if all(isinstance(w, tuple) and w[0] == "NotImplementedError" for w in ways):
            return "raised NotImplementedError: not written yet"
        return self.cases[0].message if len(ways) == 1 else ""

    def lines(self):
        head = f"{self.exercise} {self.title}" + (f": {clean(self.source, 2000)}" if self.source else "")
        if self.seed:  # the seed itself would let anyone with the package rebuild the hidden cases
            head += "  (hidden cases drawn from the instructor's secret)"
        out = [head]
        if self.error:
            return out + [f"cannot grade: {clean(self.error)}"] + self._row_lines() + [self.score_line()]
        if self._uniform_failure():
            out.append(f"  all {len(self.cases)} cases FAIL: {clean(self._uniform_failure())}")
        else:
            width = max([len(c.name) for c in self.cases] + [4]) + 2
            out.append(f"  {'case':<{width}}  {'points':<7} {'result':<6}  message")
            for c in self.ordered():
                name = c.name + (" *" if c.hidden else "")
                result = "ok" if c.passed else "FAIL"
                out.append(f"  {name:<{width}}  {c.earned:>3}/{c.points:<3} {result:<6}  {clean(c.message)}".rstrip())
                out += [f"      {clean(d, 420)}" for d in c.detail]
            out.append("  (* hidden case: a failure shows a hint, never the expected value)")
        if self.notebook_note:
            out.append(clean(self.notebook_note, 400))
        if self.diagnosis:
            out.append(clean(self.diagnosis, 400))
        if self.bonus_points:
            out.append(clean(self.bonus_note, 400))
        return out + self._row_lines() + [self.score_line()]

    def _row_lines(self):
        """A batch row's late penalty and the other files the student handed in (what became of each)."""
        out = []
        if self.late and self.penalty:
            out.append(f"late: {self.penalty:g}% off the total: {self.final}")
        elif self.late:
            out.append("late (no penalty)")
        if len(self.files) > 1:
            out.append("your files:")
            out += [f"  {clean(f, 400)}" for f in self.files[:20]] + (["  ..."] if len(self.files) > 20 else [])
        return out

    def table(self):
        """The human-readable report; its last line is `score_line()`."""
        return "\n".join(self.lines())

    def to_dict(self):
        return {"exercise": self.exercise, "file": clean(self.source, 2000), "score": self.score,
                "max_score": self.max_score, "bonus": self.bonus, "plain_python": self.plain_python,
                "bonus_decided_by": clean(self.bonus_note, 400), "status": self.status, "error": clean(self.error),
                "diagnosis": clean(self.diagnosis, 400), "sandbox": self.sandbox,
                "notebook": clean(self.notebook_note, 400), "seconds": round(self.seconds, 3),
                "hidden_cases": "the instructor's secret" if self.seed else "the shipped ones",
                "cases": [{"name": c.name, "hidden": c.hidden, "points": c.points, "passed": c.passed,
                           "message": clean(c.message)} for c in self.cases]}

    def to_json(self):
        return json.dumps(self.to_dict())

    def __repr__(self):  # what Jupyter shows as text/plain, and what a terminal shows
        return self.table()

    def _repr_html_(self):
        # Readable on any background, light or dark (JupyterLab's themes, the course site's, GitHub's): every text
        # keeps the colour the page gives text; the outcome is said by marks and words (a check or a cross), and
        # shown by colours that carry no text: a bar at the left, a tint on the failed rows.
        e = lambda text, limit=300: html.escape(clean(text, limit))
        t = html_text   # learner-facing sentences: `code` spans as <code>, everything else escaped
        passed = self.status == "passed"
        bar = "#1a7f37" if passed else "#cf222e"
        parts = [f"<div class='specdec-report {'passed' if passed else 'failed'}' "
                 f"style='border-left:4px solid {bar};padding-left:0.8em'><p><b>{e(self.exercise)} {e(self.title)}</b>"
                 f"{' &middot; ' + e(self.source, 2000) if self.source else ''}<br>"
                 f"<span style='font-size:1.2em'><b>{'&#10003;' if passed else '&#10007;'} {e(self.score_line())}</b>"
                 f"</span></p>"]
        extra = [f"<p>{t(line, 400)}</p>" for line in [self.notebook_note] + self._row_lines() if line]
        if self.error:
            return "\n".join(parts + [f"<p>cannot grade: {t(self.error)}</p>"] + extra + ["</div>"])
        if self.diagnosis:
            parts.append(f"<p>{t(self.diagnosis, 400)}</p>")
        if self._uniform_failure():
            parts.append(f"<p>&#10007; all {len(self.cases)} cases fail: {t(self._uniform_failure())}</p>")
        else:
            parts.append("<table><tr><th style='text-align:left'>case</th><th>points</th><th></th>"
                         "<th style='text-align:left'>message</th></tr>")
            for c in self.ordered():
                row = ("passed", "&#10003;", "") if c.passed else \
                      ("failed", "&#10007;", " style='background:rgba(207,34,46,0.14)'")
                detail = "".join(f"<br><code>{e(d, 420)}</code>" for d in c.detail)
                parts.append(f"<tr class='{row[0]}'{row[2]}><td style='text-align:left'>{e(c.name)}"
                             f"{' <i>(hidden)</i>' if c.hidden else ''}</td><td>{c.earned}/{c.points}</td>"
                             f"<td><b>{row[1]}</b></td>"
                             f"<td style='text-align:left'>{t(c.message)}{detail}</td></tr>")
            parts.append("</table>")
        if self.bonus_points:
            parts.append(f"<p>{t(self.bonus_note, 400)}</p>")
        return "\n".join(parts + extra + ["</div>"])
