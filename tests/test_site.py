"""The course website (`make site`): it builds with warnings as errors, and nothing on it is broken.

One build per test run, into a temporary folder, by the same script `make site` runs
(docs/build.py). The HTML is then read with the standard library's parser. What the site
must contain is taken from the repository, never from the site's configuration: every
notebooks/*.ipynb, every exercises/*/README.md and every public module of specdec must have
a page, and each lesson page must show the outputs committed in its notebook.

Skipped when the site's requirements are not installed (pip install -r requirements-site.txt,
or `make site`, which installs them); .ci/run installs them so CI runs this.
"""

import html
import importlib.util
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

REPO = Path(__file__).resolve().parent.parent
NEEDED = ("sphinx", "myst_nb", "sphinx_book_theme")
MISSING = [name for name in NEEDED if importlib.util.find_spec(name) is None]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(MISSING), reason=f"the site's requirements are not installed (no {', '.join(MISSING)}): "
                                             "pip install -r requirements-site.txt, or run `make site` once"),
]

LESSONS = sorted((REPO / "notebooks").glob("*.ipynb"))
EXERCISES = sorted((REPO / "exercises").glob("*/README.md"))
EXTERNAL = ("http", "https", "mailto", "data", "javascript", "tel")


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
NOT_PROSE = {"pre", "code", "script", "style", "math"}


class Page(HTMLParser):
    """What the tests need from one HTML page: its links, ids, images, text, <pre> text and prose
    (the text outside code, scripts and math)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.links, self.ids, self.images, self.classes = [], set(), [], {}
        self.text, self.pre, self.prose, self._pre_depth, self._open = [], [], [], 0, []
        self.feed(text)
        self.text, self.pre, self.prose = "".join(self.text), "".join(self.pre), "".join(self.prose)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag not in VOID:
            self._open.append((tag, tag in NOT_PROSE or "math" in (attrs.get("class") or "").split()))
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for key in ("href", "src"):
            if attrs.get(key):
                self.links.append(attrs[key])
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag == "a" and attrs.get("href"):
            for cls in (attrs.get("class") or "").split():
                self.classes.setdefault(cls, []).append(attrs["href"])
        if tag == "pre":
            self._pre_depth += 1

    def handle_endtag(self, tag):
        for i in range(len(self._open) - 1, -1, -1):     # close it, and whatever was left open inside it
            if self._open[i][0] == tag:
                del self._open[i:]
                break
        if tag == "pre" and self._pre_depth:
            self._pre_depth -= 1
            self.pre.append("\n")

    def handle_data(self, data):
        self.text.append(data)
        if not any(skip for _, skip in self._open):
            self.prose.append(data)
        if self._pre_depth:
            self.pre.append(data)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the site once (cold: a fresh staging folder) and parse every page."""
    root = tmp_path_factory.mktemp("site")
    out, work = root / "html", root / "work"
    env = {k: v for k, v in os.environ.items() if k != "SPECDEC_REPO_URL"}   # no launch buttons
    proc = subprocess.run([sys.executable, str(REPO / "docs" / "build.py"), "--out", str(out), "--work", str(work)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=REPO)
    assert proc.returncode == 0, f"the site build failed (warnings are errors):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    # _static/ holds the theme's Jinja macro files (*.html), not pages.
    pages = {path: Page(path.read_text(encoding="utf-8")) for path in sorted(out.rglob("*.html"))
             if "_static" not in path.relative_to(out).parts}
    return out, work, pages


def public_modules():
    """Every importable module of specdec whose dotted name has no private part."""
    import specdec
    names = ["specdec"]
    for info in pkgutil.walk_packages(specdec.__path__, "specdec."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def test_every_lesson_exercise_and_module_has_a_page(site):
    out, _, _ = site
    assert len(LESSONS) >= 8 and len(EXERCISES) >= 5   # the repository's own files were found
    expected = ["index.html", "search.html", "api.html", "exercises/README.html"]
    expected += [f"notebooks/{nb.stem}.html" for nb in LESSONS]
    expected += [f"exercises/{readme.parent.name}/README.html" for readme in EXERCISES]
    expected += [f"api/{name}.html" for name in public_modules()]
    missing = [page for page in expected if not (out / page).is_file()]
    assert not missing, f"no page for: {missing}"


def test_every_internal_link_and_image_resolves(site):
    out, _, pages = site
    broken, checked = [], 0
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme in EXTERNAL or parts.netloc:
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            checked += 1
            if not target.is_file() or out.resolve() not in target.parents:
                broken.append(f"{path.relative_to(out)}: {link} (no such file in the site)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else Page(target.read_text(encoding="utf-8")).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(out)}: {link} (no element with that id)")
    assert checked > 1000, f"only {checked} internal links found: is the parser reading the pages?"
    assert not broken, f"{len(broken)} broken internal links:\n" + "\n".join(broken[:40])


def test_lessons_show_their_committed_outputs_and_goals(site):
    out, _, pages = site
    for nb_path in LESSONS:
        page = pages[(out / "notebooks" / f"{nb_path.stem}.html").resolve()]
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        markdown = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        outputs = [o for c in code for o in c.get("outputs", [])]
        # Every committed figure is on the page (one <img> per image/png output), none was re-made.
        pngs = sum("image/png" in o.get("data", {}) for o in outputs)
        figures = [src for src in page.images if "_images/" in src]
        assert len(figures) == pngs, f"{nb_path.name}: {pngs} PNG outputs, {len(figures)} figures on its page"
        # Every line of every committed text output is on the page, verbatim; an HTML output is
        # shown as HTML (its text is on the page), a figure's text/plain twin is not shown.
        for o in outputs:
            data = o.get("data", {})
            if o["output_type"] == "stream":
                text = "".join(o["text"])
            elif "text/html" in data:
                text = Page("".join(data["text/html"])).text
            elif any(kind.startswith("image/") for kind in data):
                continue
            else:
                text = "".join(data.get("text/plain", ""))
            for line in text.splitlines():
                if line.strip():
                    assert line.strip() in page.text, f"{nb_path.name}: output line {line.strip()!r} not on its page"
        # The title, and the learning goals above the first code cell, as in the notebook.
        title = "".join(nb["cells"][0]["source"]).splitlines()[0].lstrip("# ").strip()
        assert title.replace("`", "") in page.text.replace("\u2019", "'"), f"{nb_path.name}: title"   # smart quotes
        if "learning goals" in markdown.lower():
            first_code = "".join(code[0]["source"]).splitlines()[0]
            assert page.text.lower().index("learning goals") < page.text.index(first_code), nb_path.name
        if "$" in markdown:
            assert 'class="math' in (out / "notebooks" / f"{nb_path.stem}.html").read_text(encoding="utf-8")
            assert any("mathjax" in link.lower() for link in page.links), f"{nb_path.name}: no MathJax script"
            # Every $...$ and $$...$$ became math: a dollar left in the prose is a formula MyST
            # read differently from Jupyter (it mangles the whole paragraph around it).
            if "\\$" not in markdown:
                at = page.prose.find("$")
                assert at < 0, f"{nb_path.name}: unparsed math in {page.prose[max(0, at - 80):at + 80]!r}"


def test_lessons_download_as_notebooks_and_navigate_in_order(site):
    out, _, pages = site
    for i, nb_path in enumerate(LESSONS):
        html_path = (out / "notebooks" / f"{nb_path.stem}.html").resolve()
        page = pages[html_path]
        download = f"../_sources/notebooks/{nb_path.name}"
        assert download in page.links, f"{nb_path.name}: no download link to the .ipynb"
        assert (html_path.parent / download).read_bytes() == nb_path.read_bytes()
        if i + 1 < len(LESSONS):
            assert page.classes.get("right-next") == [f"{LESSONS[i + 1].stem}.html"], f"{nb_path.name}: next page"
        if i > 0:
            assert page.classes.get("left-prev") == [f"{LESSONS[i - 1].stem}.html"], f"{nb_path.name}: previous page"
        assert "mybinder.org" not in " ".join(page.links)   # no launch button without a public repository


def test_every_page_has_the_sidebar_and_search(site):
    out, _, pages = site
    index = (out / "searchindex.js").read_text(encoding="utf-8")
    for nb_path in LESSONS:
        assert f'"notebooks/{nb_path.stem}"' in index, f"{nb_path.name} is not in the search index"
    content = [p for p in pages if p.name not in ("genindex.html", "search.html", "py-modindex.html")]
    for path in content:
        linked = {(path.parent / unquote(urlsplit(link).path)).resolve() for link in pages[path].links}
        lessons = {(out / "notebooks" / f"{nb.stem}.html").resolve() for nb in LESSONS}
        assert lessons <= linked | {path}, f"{path.relative_to(out)}: the sidebar lacks some lessons"
        assert any(link.endswith("search.html") for link in pages[path].links), path


def test_docstring_blocks_keep_their_lines(site):
    # The docstrings are plain text: an indented formula, table or doctest must reach the page
    # line by line (in a <pre>), not reflowed into a paragraph.
    out, _, pages = site
    for name in public_modules():
        doc = inspect.cleandoc(importlib.import_module(name).__doc__ or "")
        page = pages[(out / "api" / f"{name}.html").resolve()]
        for line in doc.splitlines():
            if line.startswith("    ") and line.strip() and line.strip() != "<BLANKLINE>":   # Sphinx drops the marker
                assert html.unescape(line.strip()) in page.pre, f"{name}: {line.strip()!r} is not a line of a <pre>"


def test_launch_buttons_point_at_the_notebook_when_a_repository_is_given(site):
    out, work, _ = site
    binder_out = out.parent / "binder"
    env = {**os.environ, "SPECDEC_REPO_URL": "https://github.com/example/specdec", "SPECDEC_REPO_BRANCH": "main"}
    lesson = LESSONS[0]
    proc = subprocess.run([sys.executable, str(REPO / "docs" / "build.py"), "--out", str(binder_out), "--work", str(work),
                           "--only", f"notebooks/{lesson.name}"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    page = Page((binder_out / "notebooks" / f"{lesson.stem}.html").read_text(encoding="utf-8"))
    binder = [link for link in page.links if "mybinder.org" in link]
    assert binder and all(f"notebooks/{lesson.name}" in link and "example/specdec/main" in link for link in binder), binder
