"""Sphinx configuration of the course website (`make site`, which runs docs/build.py).

Sphinx reads a staging folder that build.py fills with a copy of the repository (docs/index.md and
docs/api.rst at its root, docs/README.md at its own path) and one generated page per public module of
specdec. Which of those files are pages is decided here, by pattern: README.md (the course map), every
notebooks/*.ipynb, every exercises/*/README.md and exercises/*/*.ipynb present, benchmarks/README.md
and docs/README.md (the site's own manual). The toctrees in index.md glob the same patterns, so a
lesson or an exercise that is added or renamed takes its place with no edit: lessons in file-name
order, exercises in the order the course meets them (_ext/course_order.py, from exercises.COURSE);
an exercise's notebook is listed under its statement.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))   # this site's own extensions

project = "specdec"
author = "the specdec authors"
copyright = "the specdec authors"
html_title = "specdec: speculative decoding, taught, proved and graded"

extensions = [
    "myst_nb",                  # .md and .ipynb pages (MyST Markdown, notebooks with their outputs)
    "sphinx.ext.autodoc",       # the API reference (docs/build.py writes one page per module)
    "sphinx.ext.napoleon",      # the few "Args:/Returns:" sections in the docstrings
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",      # each documented function links to its highlighted source
    "docstrings",               # _ext/docstrings.py: plain-text docstrings shown as laid out
    "repo_links",               # _ext/repo_links.py: the README's and exercises' links work on the site
    "course_order",             # _ext/course_order.py: the sidebar lists the exercises in course order
    "offline_math",             # _ext/offline_math.py: MathJax from PyPI, served with the site (offline)
    "portable_markup",          # _ext/portable_markup.py: the notebooks' \\tag-ged multi-line formulas
    "reading_time",             # _ext/reading_time.py: "About N min to read" under each lesson's title
    "sphinxcontrib.bibtex",     # docs/references.md: the bibliography, from docs/references.bib
    "sphinx_copybutton",        # a copy button on every code cell and code block (not on outputs)
    "numbered",                 # _ext/numbered.py: Theorem 3.2, Figure 3.1, (3.5) are links, and so are their mentions
    "citations",                # _ext/citations.py: an arXiv citation links to its bibliography entry, and back
    "html_fixes",               # _ext/html_fixes.py: the bibliography's and the source index's lists, as ARIA wants
    "search_offline",           # _ext/search_offline.py: search excerpts from file:// too, and a typo forgiven
]

root_doc = "index"
include_patterns = ["index.md", "README.md", "api.rst", "api/*.rst", "notebooks/*.ipynb",
                    "exercises/README.md", "exercises/*/README.md", "exercises/*/*.ipynb",
                    "benchmarks/README.md", "docs/README.md", "docs/glossary.md", "docs/references.md"]
bibtex_bibfiles = ["references.bib"]        # relative to this folder (docs/)
bibtex_cite_id = "cite-{key}"               # each entry's id: where _ext/citations.py points a citation
# The copy button goes on code (a cell's source, a command line), not on outputs; prompts are not copied.
copybutton_selector = "div.highlight:not(.cell_output div.highlight) pre"
copybutton_exclude = ".linenos, .gp, .go"

# Notebooks are shown exactly as committed: CI re-executes them (strict nbval), the site never does.
nb_execution_mode = "off"
nb_merge_streams = True         # one output box per cell, not one per print() flush
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
# Jupyter renders $$...$$ inside a paragraph (a line of its own, no blank line around it) as display
# math; MyST does too only with this, and otherwise mangles the dollars of the whole paragraph.
myst_dmath_double_inline = True
myst_heading_anchors = 3        # [text](#a-heading) links in the Markdown resolve
# Downloads get the notebook's own name (01_x.ipynb), not 01_x.ipynb.txt.
html_sourcelink_suffix = ""

# API reference: build.py writes an `automodule` page for every public module of specdec (the
# library the lessons import; the grading engine, grader/, is not part of it).
# ignore-module-all: a package's __all__ re-exports names (specdec.softmax is specdec.logits.softmax);
# each object is documented once, on the page of the module that defines it.
autodoc_default_options = {"members": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# `name`: a link to a documented Python name, else code as written (_ext/docstrings.py).
default_role = "name-or-code"

html_theme = "sphinx_book_theme"
html_static_path = ["_static"]
html_css_files = ["specdec.css"]
html_js_files = ["specdec.js"]
# pydata-sphinx-theme reads the starting colour mode from here; unset, every page logged
# "Got invalid theme mode" in the browser's console. "auto": the reader's system setting.
html_context = {"default_mode": "auto"}
html_last_updated_fmt = None
html_theme_options = {
    "home_page_in_toc": False,      # the sidebar's title is the link home
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": True,    # download the page's source: the .ipynb itself for a lesson
    "use_fullscreen_button": True,
    "navigation_with_keys": True,
    # The pydata theme's top bar held only a second search box (the sidebar has one): no top bar.
    "navbar_start": [], "navbar_center": [], "navbar_end": [], "navbar_persistent": [],
}

# Launch, repository, issue and edit links need a public repository to point at, which a build cannot
# check (this one has no public URL), so they are off unless asked for:
# `make site REPO_URL=https://github.com/OWNER/specdec [REPO_BRANCH=main]`. Without them each page still
# has its download button (the .ipynb itself for a notebook). Binder (mybinder.org) builds the
# repository's requirements.txt, which installs specdec itself (`-e .`), so every lesson runs there.
# Colab is not offered: it would lack specdec.
_repo = os.environ.get("SPECDEC_REPO_URL", "").strip().rstrip("/")
if _repo:
    html_theme_options.update({
        "repository_url": _repo,
        "repository_branch": os.environ.get("SPECDEC_REPO_BRANCH", "").strip() or "main",
        "path_to_docs": "",         # pages sit at the same paths as in the repository (but see _edit_links)
        "use_repository_button": True,
        "use_issues_button": True,
        "use_edit_page_button": True,
        "launch_buttons": {"binderhub_url": "https://mybinder.org", "notebook_interface": "jupyterlab"},
    })


def _edit_links(app, pagename, templatename, context, doctree):
    """The edit link of a page of docs/ mirrored at the site's root (index.md, api.rst) points into docs/;
    an API page, written by build.py from a module's docstrings, has none (its module's [source] links)."""
    if pagename.startswith("api/"):
        context["page_source_suffix"] = ""          # the theme adds no edit link to a page without a source
    elif "/" not in pagename and (Path(__file__).parent / context.get("sourcename", "").removesuffix(".txt")).is_file():
        context["doc_path"] = "docs"


def setup(app):
    if _repo:
        app.connect("html-page-context", _edit_links, priority=450)    # before the theme's buttons (501)
