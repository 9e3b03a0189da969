"""Sphinx extension: MathJax from a package, served with the site, so that every formula renders offline.

MathJax 3 comes from PyPI's sphinx-mathjax-offline (requirements-site.txt), which ships its full
distribution (24 MB). Its own Sphinx extension would copy all of it into every site; this copies
only what the pages load: tex-svg.js (TeX in, SVG out: one file with its fonts inside, so nothing is
fetched, not even a font, which a browser refuses to load from a file:// page) and the TeX
extensions MathJax loads on demand (\\boldsymbol, \\cancel, ...): 2.7 MB, into _static/mathjax/.
MathJax's own configuration is mathjax_config.js, beside this file (display formulas flush left on a
narrow screen).

The search page gets MathJax too, with a script that typesets each result's excerpt as it arrives, so
an excerpt shows formulas instead of their TeX where the excerpt holds a whole formula.
"""

import shutil
from importlib import metadata
from pathlib import Path

from sphinx.errors import ExtensionError

PACKAGE = "sphinx-mathjax-offline"
FILES = ["tex-svg.js", "input/tex/extensions"]
SEARCH_SCRIPT = """
document.addEventListener("DOMContentLoaded", () => {
  const results = document.getElementById("search-results");
  if (!results) return;
  let pending = null;
  new MutationObserver(() => {
    clearTimeout(pending);
    pending = setTimeout(() => window.MathJax && MathJax.typesetPromise && MathJax.typesetPromise([results]), 200);
  }).observe(results, {childList: true, subtree: true});
});
"""


def mathjax_folder():
    """The MathJax distribution inside the installed sphinx-mathjax-offline."""
    try:
        dist = metadata.distribution(PACKAGE)
    except metadata.PackageNotFoundError:
        raise ExtensionError(f"{PACKAGE} is not installed: pip install -r requirements-site.txt") from None
    folder = Path(dist.locate_file("sphinx-mathjax-offline/static/mathjax"))
    if not (folder / FILES[0]).is_file():
        raise ExtensionError(f"{PACKAGE} has no {FILES[0]} in {folder}")
    return folder


def _copy(app, exc):
    if exc is None and app.builder.format == "html":
        source, target = mathjax_folder(), Path(app.outdir) / "_static" / "mathjax"
        for name in FILES:
            if (source / name).is_dir():
                shutil.copytree(source / name, target / name, dirs_exist_ok=True)
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source / name, target / name)


def _search_page(app, pagename, templatename, context, doctree):
    if pagename == "search":
        context["has_maths_elements"] = True       # sphinx.ext.mathjax then adds MathJax to the page
        app.builder.add_js_file(None, body=SEARCH_SCRIPT)


def _config(app, config):
    mathjax_folder()        # fail early, saying what to install
    config.mathjax_path = "mathjax/" + FILES[0]     # relative: under the site's _static/
    config.mathjax_config_path = str(Path(__file__).with_name("mathjax_config.js"))


def setup(app):
    app.connect("config-inited", _config)
    app.connect("html-page-context", _search_page, priority=400)    # before sphinx.ext.mathjax's (500)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
