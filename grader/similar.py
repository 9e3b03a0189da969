"""Similar submissions: files that are the same, or nearly, once names, comments, strings and layout are set aside.

A file's shape is its token stream (Python's own tokenizer: linear time, nothing is run or
parsed into a tree) with every identifier renamed by order of first appearance, every string
and number replaced by a placeholder, and comments, blank lines and spacing dropped. Renaming
variables, rewording comments or reformatting changes nothing; reordering statements does.

Two files are flagged when their shapes are equal ("identical") or when the sets of 8-token
runs they share, less those of the exercise's released stub (which every learner starts from),
overlap by SIMILAR or more (Jaccard; "nearly identical"). A flag is a reason to look, not a
verdict: short exercises leave little room, so honest solutions can be alike.

Each grading process computes its file's `fingerprint` (a whole-shape hash and at most
SKETCH of its smallest run hashes, a bottom-k sketch), so the batch compares small sets and
never reads a submission itself.

    >>> a = fingerprint("def f(x):\\n    # double it\\n    return x * 2\\n")
    >>> b = fingerprint("def g(value):\\n    return value*2   # twice\\n")
    >>> a == b
    True
    >>> groups({"alice.py": a, "bob.py": b, "carol.py": fingerprint("def f(x):\\n    return x + 1\\n")})
    {'alice.py': 'S1: identical to bob.py', 'bob.py': 'S1: identical to alice.py'}
"""

import hashlib
import io
import keyword
import os
import tempfile
import token
import tokenize

from . import intake

RUN = 8          # tokens per run
SKETCH = 400     # run hashes kept per file (the smallest)
SIMILAR = 0.9    # Jaccard of the runs (stub's set aside) from which two files are flagged
MAX_TOKENS = 200_000


def shape(code):
    """The normalised token stream of `code`, as a tuple of strings; () if it cannot be tokenized."""
    names, out = {}, []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == token.NAME:
                out.append(tok.string if keyword.iskeyword(tok.string) else
                           names.setdefault(tok.string, f"n{len(names)}"))
            elif tok.type == token.STRING or tok.type == getattr(token, "FSTRING_START", -1):
                out.append("s")
            elif tok.type == token.NUMBER:
                out.append("0")
            elif tok.type in (token.OP, token.INDENT, token.DEDENT, token.NEWLINE):
                out.append(tok.string if tok.type == token.OP else token.tok_name[tok.type])
            if len(out) > MAX_TOKENS:
                break
    except (tokenize.TokenError, SyntaxError, ValueError):
        return tuple(out)
    return tuple(out)


def _runs(stream):
    return {int.from_bytes(hashlib.blake2b("\x00".join(stream[i:i + RUN]).encode(), digest_size=8).digest(), "big")
            for i in range(max(len(stream) - RUN + 1, 0))}


def fingerprint(code, stub=""):
    """(hash of the whole shape, the SKETCH smallest run hashes not in the stub's runs) of a file's code."""
    stream = shape(code)
    whole = hashlib.blake2b("\x00".join(stream).encode(), digest_size=12).hexdigest()
    runs = _runs(stream) - (_runs(shape(stub)) if stub else set())
    return whole, tuple(sorted(runs)[:SKETCH])


def _jaccard(a, b):
    """Jaccard of two files' runs, estimated from their bottom-k sketches (exact when both are short)."""
    if not a or not b:
        return 0.0
    union = sorted(set(a) | set(b))[:SKETCH]
    both = set(a) & set(b)
    return sum(1 for h in union if h in both) / len(union)


def groups(fingerprints):
    """{name: 'S1: identical to x' or 'S2: nearly identical to x, y'} for every flagged name; others absent."""
    names = sorted(n for n, f in fingerprints.items() if f)
    parent = {n: n for n in names}

    def root(n):
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    identical = set()
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            (wa, ra), (wb, rb) = fingerprints[a], fingerprints[b]
            same = wa == wb and bool(ra or wa)
            if same or _jaccard(ra, rb) >= SIMILAR:
                parent[root(b)] = root(a)
                if same:
                    identical |= {(a, b), (b, a)}
    members = {}
    for n in names:
        members.setdefault(root(n), []).append(n)
    out = {}
    for number, group in enumerate((g for g in sorted(members.values()) if len(g) > 1), start=1):
        for n in group:
            others = [m for m in group if m != n]
            how = "identical to" if all((n, m) in identical for m in others) else "nearly identical to"
            out[n] = f"S{number}: {how} {', '.join(others[:5])}" + (f" and {len(others) - 5} more" if len(others) > 5
                                                                      else "")
    return out


def flag(entries):
    """[flag or ""] for [(student, name, fingerprint)], in order: `groups` over the entries, each named by its
    file's name, or `student: name` where two entries share a name (every student's folder may hold
    ex01_verify.py: one name for two files would hide a copy between them).

    >>> flag([("a", "x.py", fingerprint("y = 1")), ("b", "x.py", fingerprint("y = 1"))])
    ['S1: identical to b: x.py', 'S1: identical to a: x.py']
    """
    counts = {}
    for _, name, _ in entries:
        counts[name] = counts.get(name, 0) + 1
    names = [name if counts[name] == 1 else f"{student}: {name}" for student, name, _ in entries]
    flagged = groups(dict(zip(names, (f for _, _, f in entries))))
    return [flagged.get(n, "") for n in names]


def across(sources, exercise, pattern=None, finals=None):
    """(lines, files read): the groups of similar files among every student's counted file of `exercise` in
    `sources` (class folders, LMS downloads, Gradescope exports, read by `intake.read_batch`), each file named with
    its source, its student and, from `finals` ({student: final}) or the export's own score, what it scored.

    The counted file is the one `batch.plan` would grade (the latest upload). Batches graded apart (two
    sections, a Gradescope assignment) are compared as one class: a copy split across them is flagged.
    """
    from .batch import plan
    from .notebook import NotebookError
    from .registry import exercise as get_exercise
    from .submission import read_code
    stub, entries, who = get_exercise(exercise).stub, [], []
    with tempfile.TemporaryDirectory(prefix="specdec-similar-") as work:
        for n, source in enumerate(sources):
            uploads = intake.read_batch(source, os.path.join(work, str(n)), pattern)
            for row in plan(uploads, exercise):
                if not row.graded:
                    continue
                upload, file, _ = row.graded[-1]
                try:
                    code, _ = read_code(file.path)
                except (NotebookError, OSError):
                    continue
                name = f"{os.path.basename(source.rstrip('/'))}: {file.name}"
                entries.append((row.student, name, fingerprint(code, stub)))
                score = (finals or {}).get(row.student, "") or upload.score
                who.append(f"{name} (student {row.student}" + (f", {upload.person}" if upload.person else "") +
                           (f", final {score}" if score != "" else "") + ")")
    flagged = flag(entries)
    lines = [f"{f.split(':')[0]}: {w}" for f, w in sorted(zip(flagged, who)) if f]
    return lines, len(entries)
