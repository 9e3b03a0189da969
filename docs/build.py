"""Build the course website with Sphinx, warnings as errors: `python docs/build.py [--out _site]`.

`make site` runs this (after installing requirements-site.txt); tests/test_site.py runs it
into a temporary folder. Sphinx reads one source folder, but the course's pages live where
learners use them: lessons in notebooks/, the course map in README.md, exercise statements and
notebooks in exercises/, the benchmarks' record in benchmarks/README.md, the site's own pages (home,
API reference) and its manual (docs/README.md) in docs/. So this mirrors the repository into a
staging folder (WORK/src) at the same relative paths (docs/*.md and docs/*.rst at its root, but
docs/README.md, docs/glossary.md and docs/references.md, which the repository's Markdown and notebooks
link to at those paths, keep them; the rest of docs/ is code, not pages), so that the links
written for a reader of the repository resolve on the site as they do there: a lesson's
`../README.md` and `../exercises/ex02_softmax/ex02_softmax.ipynb` are pages, and a link to any other
file (`benchmarks/bench_verify.py`) is a download, since the file is in the mirror. Files keep their
modification times and only changed ones are copied, so Sphinx rebuilds only what changed; a file
deleted from the repository is deleted from the mirror. docs/conf.py decides which mirrored files
are pages; its extension docs/_ext/repo_links.py rewrites what a Markdown page links to where no
page or file answers (a folder, a module of specdec), docs/_ext/docstrings.py lays out the
plain-text docstrings, and docs/_ext/course_order.py lists the exercises in course order. Notebooks
are rendered from their committed outputs, never run.

The API reference gets one page per public module of specdec, the library the lessons import,
found by walking the package (its subpackages batched/, exact/, generation/ and models/ included),
so a new module appears without an edit. A private module (specdec._checks, specdec.__main__) has
none: it is how the public ones work, not something a reader calls, and its public siblings' pages
say what it does for them. Each page is `automodule` (the module's docstring, then its documented
functions and classes), and a package's page lists its modules. The grading engine (the top-level
package grader/) is not walked: it is not what the lessons teach, and api.rst says where it is.

Sphinx writes into WORK/html, which is then mirrored to the output folder: MyST-NB writes the
figures it extracts from notebooks into a jupyter_execute/ folder beside Sphinx's output folder,
which for _site/ would be the repository's root.

Subtle: symlinks instead of copies would be lighter, but MyST resolves a link through the real
path of the file it is in, which lies outside the source folder, and then finds no page. And
autosummary's recursive mode is not used for the API pages: it resolves a dotted name attribute
first, so a module named like the function its package re-exports (the grader's `check`, when the
grader was walked) became that function, and the module's page was lost.
"""

import argparse
import importlib
import os
import pkgutil
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PACKAGE = "specdec"
API = "api"          # the generated module pages, inside the mirror
# Not mirrored: hidden files (.git, .venv), build output and caches. docs/ is mirrored at the root.
SKIPPED = {"_build", "_site", "build", "__pycache__", ".ipynb_checkpoints"}
# Pages of docs/ mirrored at their own path, docs/NAME, not at the root: the root's README.md is the
# course map, and these are linked from the repository's Markdown and notebooks as docs/NAME.
KEEP_PATH = {"README.md", "glossary.md", "references.md"}


def wanted_files(*outside):
    """{path inside the mirror: path in the repository} for every file the site is built from:
    docs/*.md and docs/*.rst at the root (docs/README.md at its own path), and the rest of the
    repository at its own path, except hidden files, build output and the folders `outside` (the
    output and staging folders)."""
    files = {(path.relative_to(REPO) if path.name in KEEP_PATH else path.relative_to(DOCS)): path
             for path in sorted(DOCS.iterdir()) if path.is_file() and path.suffix in (".md", ".rst")}
    outside = {Path(folder).resolve() for folder in outside}
    for folder, subfolders, names in os.walk(REPO):
        subfolders[:] = sorted(name for name in subfolders
                               if not (name.startswith(".") or name in SKIPPED or name.endswith(".egg-info")
                                       or Path(folder, name).resolve() in outside
                                       or Path(folder, name) == DOCS))
        for name in sorted(names):
            if not name.startswith("."):
                path = Path(folder, name)
                files[path.relative_to(REPO)] = path
    return files


def public_modules():
    """{dotted name: module} for the package and every submodule with no private part, in walk order."""
    package = importlib.import_module(PACKAGE)
    modules = {PACKAGE: package}
    for info in pkgutil.walk_packages(package.__path__, PACKAGE + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            modules[info.name] = importlib.import_module(info.name)
    return modules


def summary(module):
    """The first line of a module's docstring, safe to drop into reST."""
    first = (module.__doc__ or "").strip().splitlines()[0:1]
    return (first[0] if first else "").replace("\\", "\\\\").replace("*", "\\*").replace("|", "\\|")


def api_pages():
    """{path inside the mirror: reST text} for the page of each public module."""
    modules = public_modules()
    pages = {}
    for name, module in modules.items():
        children = [sub for sub in modules if sub.rpartition(".")[0] == name]
        lines = [name, "=" * len(name), "", f".. automodule:: {name}", ""]
        if children:
            lines += [".. rubric:: Modules", ""]
            lines += [f"- :doc:`{sub.rpartition('.')[2]} <{sub}>`: {summary(modules[sub])}" for sub in children]
            lines += ["", ".. toctree::", "   :hidden:", "", *(f"   {sub}" for sub in children), ""]
        pages[Path(API) / f"{name}.rst"] = "\n".join(lines)
    return pages


def mirror(dest, files, texts=None):
    """Make folder `dest` hold exactly `files` ({relative path: file to copy}) and `texts`
    ({relative path: text to write}); copy or write only what differs, so mtimes say what changed.
    Return the relative paths of the files it deleted."""
    texts = texts or {}
    deleted = []
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(dest.rglob("*"), reverse=True):      # children before their folders
        rel = path.relative_to(dest)
        if path.is_dir() and not path.is_symlink():
            if not any(path.iterdir()):
                path.rmdir()
        elif rel not in files and rel not in texts:
            path.unlink()
            deleted.append(rel)
    for rel, origin in files.items():
        target, st = dest / rel, origin.stat()
        if target.exists() and target.stat().st_mtime_ns == st.st_mtime_ns and target.stat().st_size == st.st_size:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, target)
    for rel, text in texts.items():
        target = dest / rel
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return deleted


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "_site"), help="output folder (default: _site)")
    parser.add_argument("--work", default=str(REPO / "_build" / "site"),
                        help="staging and cache folder, kept for incremental builds (default: _build/site)")
    parser.add_argument("--only", nargs="+", default=[], metavar="PAGE",
                        help="write only these pages, as paths in the repository (e.g. notebooks/01_x.ipynb)")
    parser.add_argument("sphinx_args", nargs="*", help="extra sphinx-build options, after --")
    args = parser.parse_args(argv)

    # autodoc imports the NumPy modules; a BLAS thread pool is of no use to it.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    work, out = Path(args.work).resolve(), Path(args.out).resolve()
    if out.is_dir() and any(out.iterdir()) and not (out / ".buildinfo").exists():
        parser.error(f"--out {out} is a folder with files and no previous site in it: it would be emptied")
    if mirror(work / "src", wanted_files(work, out), api_pages()):
        # A page was deleted or renamed. Sphinx forgets it but never deletes its HTML, which would
        # stay on the site, so rewrite every page (from the cached doctrees: seconds).
        shutil.rmtree(work / "html", ignore_errors=True)
    from sphinx.cmd.build import build_main   # imported late: --help works without Sphinx

    # Sphinx re-reads a page when its source (or, for an API page, its module) changes, but not
    # when the code in conf.py or its extensions in docs/_ext/ does, nor the table of exercises that
    # _ext/course_order.py reads: then start afresh (-E).
    pickle = work / "doctrees" / "environment.pickle"
    code = [DOCS / "conf.py", *(DOCS / "_ext").glob("*.py"), REPO / "exercises" / "__init__.py"]
    fresh = ["-E"] if pickle.exists() and max(f.stat().st_mtime for f in code) > pickle.stat().st_mtime else []
    status = build_main(["-W", "--keep-going", "-q", "-b", "html", "-c", str(DOCS),
                         "-d", str(work / "doctrees"), *fresh, *args.sphinx_args,
                         str(work / "src"), str(work / "html"),
                         *(str(work / "src" / page) for page in args.only)])
    if status == 0:
        mirror(out, {p.relative_to(work / "html"): p for p in (work / "html").rglob("*") if p.is_file()})
    return status


if __name__ == "__main__":
    sys.exit(main())
