"""Sphinx configuration of the course website (`make site`, which runs docs/build.py).

Sphinx reads a staging folder that build.py fills with copies of docs/*.md and docs/*.rst,
notebooks/, the exercises' statements and one generated page per module of specdec. Which of
those files are pages is decided here, by pattern: every notebooks/*.ipynb and every
exercises/*/README.md present. The toctrees in index.md glob the same patterns, so a lesson or
an exercise that is added or renamed takes its place, in file-name order, with no edit.
"""

import os
import re

project = "specdec"
author = "the specdec authors"
copyright = "the specdec authors"
html_title = "specdec: speculative decoding, taught, proved and graded"

extensions = [
    "myst_nb",                  # .md and .ipynb pages (MyST Markdown, notebooks with their outputs)
    "sphinx.ext.autodoc",       # the API reference (docs/build.py writes one page per module)
    "sphinx.ext.napoleon",      # the few "Args:/Returns:" sections in the docstrings
    "sphinx.ext.mathjax",
]

root_doc = "index"
include_patterns = ["index.md", "api.rst", "api/*.rst",
                    "notebooks/*.ipynb", "exercises/README.md", "exercises/*/README.md"]

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

# API reference: build.py writes an `automodule` page for every public module of specdec.
# ignore-module-all: a package's __all__ re-exports names (specdec.softmax is specdec.logits.softmax);
# each object is documented once, on the page of the module that defines it.
autodoc_default_options = {"members": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# The docstrings write names as `verify_speculative_tokens`: a link where Sphinx knows the name,
# code otherwise (nitpicky is off, so an unknown name is not a warning).
default_role = "py:obj"

html_theme = "sphinx_book_theme"
html_static_path = ["_static"]
html_css_files = ["specdec.css"]
html_last_updated_fmt = None
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": True,    # download the page's source: the .ipynb itself for a lesson
    "use_fullscreen_button": True,
    "navigation_with_keys": True,
}

# Launch buttons need a public repository to point at, which a build cannot check, so they are
# off unless asked for: `make site REPO_URL=https://github.com/OWNER/specdec [REPO_BRANCH=main]`.
# Binder (mybinder.org) builds the repository's requirements.txt, which installs specdec
# itself (`-e .`), so every lesson runs there. Colab is not offered: it would lack specdec.
_repo = os.environ.get("SPECDEC_REPO_URL", "").strip().rstrip("/")
if _repo:
    html_theme_options.update({
        "repository_url": _repo,
        "repository_branch": os.environ.get("SPECDEC_REPO_BRANCH", "").strip() or "main",
        "path_to_docs": "",         # pages sit at the same paths as in the repository
        "use_repository_button": True,
        "launch_buttons": {"binderhub_url": "https://mybinder.org", "notebook_interface": "jupyterlab"},
    })


# --- Plain-text docstrings, shown as their author laid them out ---------------------------------
# The library's docstrings are written for help() and doctest, not for reStructuredText: a formula
# or a table is an indented block under a sentence. Parsed as reST, such a block becomes a quote or
# a definition list, and its line breaks and alignment are lost. So each indented run of lines under
# a plain paragraph becomes a literal block (`code-block:: text`), unless it is a doctest (reST
# shows those as code already). Indented lines under a list item, a field (napoleon's output) or a
# directive are left alone: they continue it.

_MARKUP = re.compile(r"([-*+] |\d+[.)] |#\. |:[^:]+:|\.\. |>>>|\|)")


def _indent(line):
    return len(line) - len(line.lstrip())


def literal_blocks(lines):
    """Return docstring `lines` with the indented plain-text runs made literal blocks."""
    out = []
    owner_plain = False     # is the last unindented line plain paragraph text?
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip() or _indent(line) == 0:
            if line.strip():
                markup = _MARKUP.match(line)
                if markup and owner_plain and out and out[-1].strip() and not line.startswith(".."):
                    out.append("")      # a list right under a sentence: reST needs a blank line
                owner_plain = not markup
            out.append(line)
            i += 1
            continue
        j = i
        while j < n and lines[j].strip() and _indent(lines[j]) > 0:
            j += 1
        run = lines[i:j]
        if owner_plain and not run[0].lstrip().startswith(">>>"):
            # "text", not Python: a formula such as "P(n) = alpha^n for n < gamma" is no code.
            out += ["", ".. code-block:: text", ""]
            out += run
            nxt = next((line for line in lines[j:] if line.strip()), "")
            if _indent(nxt) > 0:
                out += ["", ".."]       # an empty comment ends the block: the next run is its own
            out.append("")
        else:
            out += run
        i = j
    return out


def _process_docstring(app, what, name, obj, options, lines):
    lines[:] = literal_blocks(lines)


def setup(app):
    # After napoleon (priority 500) has turned "Args:" sections into fields.
    app.connect("autodoc-process-docstring", _process_docstring, priority=600)
