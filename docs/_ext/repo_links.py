"""Sphinx extension: links on the repository's Markdown pages (README.md, the exercises' READMEs) that work on the site.

README.md and the exercises' READMEs are written for a reader of the repository: they link to files
and quote file names in code (`specdec/verify.py`, `notebooks/`). build.py mirrors the whole
repository into the source folder, so a link to a page (a lesson, an exercise) resolves as written,
and a link to any other file becomes a download (MyST does that for an existing file that is not a
page). What is left is done here, in memory (the page's downloadable source stays as written):
a module of specdec links to its API page; a folder to the page that presents it (its README, its
package's API page, the home page's list of lessons) or, with none, loses its link but keeps its
text; and a quoted name of such a file or folder becomes a link. The notebooks' Markdown cells get
the same treatment (a lesson's `specdec/verify.py`, an exercise notebook's `ex01_verify.py` become
links, as on the exercise's statement page); their downloadable .ipynb stays as committed.

An exercise's statement (exercises/NAME/README.md) also gets a hidden toctree listing the notebook
beside it, so the notebook sits under the statement in the sidebar and follows it in the
previous/next links.
"""

import json
import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDER_PAGES = {"notebooks": "index.md#lessons"}      # a folder whose pages another page lists
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_LINK = re.compile(r"(?<!!)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]+)\)")   # [text](target); not ![image](...)
_CODE = re.compile(r"(?<!`)`([\w./-]+)`(?!`)")      # a code span that could be a path: no spaces, no (
_SCHEME = re.compile(r"^[a-zA-Z][\w+.-]*:")


def _page_target(env, page, path):
    """What the Markdown page `page` (a path in the source folder) should link to for `path`, a
    path written on it: a path relative to the page, or None when nothing on the site answers."""
    src = Path(env.srcdir)
    target = Path(os.path.normpath(src / page.parent / path))
    if src not in target.parents:
        return None
    rel = target.relative_to(src)

    def link(to):   # `to`: a path in the source folder
        return os.path.relpath(src / to, src / page.parent).replace(os.sep, "/")

    def api_page(parts):   # the API page of the module or package at these path parts, if any
        name = ".".join(parts)
        return f"api/{name}.rst" if env.path2doc(str(src / "api" / f"{name}.rst")) in env.found_docs else None

    if target.is_file():
        if rel.parts[0] == "specdec" and rel.suffix == ".py":
            parts = rel.with_suffix("").parts
            page_of = api_page(parts[:-1] if parts[-1] == "__init__" else parts)
            if page_of:
                return link(page_of)
        return path     # a page resolves as written; another file is a download
    if target.is_dir():
        readme = rel / "README.md"
        if env.path2doc(str(src / readme)) in env.found_docs:
            return link(readme)
        if rel.parts and rel.parts[0] == "specdec" and api_page(rel.parts):
            return link(api_page(rel.parts))
        if rel.as_posix() in FOLDER_PAGES:
            return link(FOLDER_PAGES[rel.as_posix()])
    return None


def link_paths(env, page, text):
    """Return Markdown `text` (of the page at `page`) with its links made to resolve on the site and
    its quoted paths made links, as the comment above says."""
    out, fence = [], None
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence = opened.group(1)
        elif not line.lstrip().startswith("#"):      # headings keep their code: they are the page's TOC
            line = _link_line(env, page, line)
        out.append(line)
    return "\n".join(out)


def _link_line(env, page, line):
    pieces, at = [], 0
    for link in _LINK.finditer(line):
        pieces.append(_CODE.sub(lambda code: _quoted(env, page, code), line[at:link.start()]))
        text, target = link.groups()
        path, hash_, anchor = target.partition("#")
        if path and not _SCHEME.match(path) and not path.startswith("/"):
            where = _page_target(env, page, path)
            if where is None and Path(os.path.normpath(Path(env.srcdir) / page.parent / path)).exists():
                pieces.append(text)     # a folder no page presents: keep the words, drop the link
                at = link.end()
                continue
            if where is not None and where != path:
                target = where if "#" in where else where + hash_ + anchor
        pieces.append(f"[{text}]({target})")
        at = link.end()
    pieces.append(_CODE.sub(lambda code: _quoted(env, page, code), line[at:]))
    return "".join(pieces)


def _quoted(env, page, code):
    """A quoted path as a link to what the site has for it; anything else as it was."""
    path = code.group(1)
    if "/" not in path and "." not in path:       # `p`, `gamma`, `Makefile`: words, not paths here
        return code.group(0)
    candidates = [path] + ([os.path.relpath(path, page.parent.as_posix())] if "/" in path else [])
    for candidate in candidates:        # as written on the page, then from the repository's root
        target = Path(os.path.normpath(Path(env.srcdir) / page.parent / candidate))
        if target.exists() and target != Path(env.srcdir) / page:
            where = _page_target(env, page, candidate)
            return f"[{code.group(0)}]({where})" if where else code.group(0)
    return code.group(0)


def _exercise_notebooks(env, docname):
    """A hidden toctree that lists an exercise's notebook under its statement (docname
    exercises/NAME/README), so it sits under it in the sidebar; empty for any other page."""
    folder, _, name = docname.rpartition("/")
    if name != "README" or folder.count("/") != 1 or not folder.startswith("exercises/"):
        return ""
    notebooks = sorted(doc for doc in env.found_docs if doc.rpartition("/")[0] == folder
                       and str(env.doc2path(doc)).endswith(".ipynb"))
    entries = "".join(f"The notebook, {doc.rpartition('/')[2]}.ipynb <{doc.rpartition('/')[2]}>\n" for doc in notebooks)
    return f"\n\n```{{toctree}}\n:hidden:\n\n{entries}```\n" if entries else ""


def link_notebook(env, page, text):
    """The notebook `text` (JSON, at `page`) with link_paths applied to each Markdown cell."""
    notebook = json.loads(text)
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            markdown = "".join(cell["source"])
            linked = link_paths(env, page, markdown)
            if linked != markdown:
                cell["source"] = linked
    return json.dumps(notebook, ensure_ascii=False)


def _source_read(app, docname, source):
    page = Path(app.env.doc2path(docname)).relative_to(app.env.srcdir)
    # Only the repository's own Markdown and notebooks, at the same path; not docs/index.md (written for the site).
    if not (REPO / page).is_file():
        return
    if page.suffix == ".md":
        source[0] = link_paths(app.env, page, source[0]) + _exercise_notebooks(app.env, docname)
    elif page.suffix == ".ipynb":
        source[0] = link_notebook(app.env, page, source[0])


def setup(app):
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
