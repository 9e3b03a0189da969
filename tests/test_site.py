"""The course website (`make site`): it builds with warnings as errors, and nothing on it is broken.

One build per test run, into a temporary folder, by the same script `make site` runs
(docs/build.py), shared with tests/test_site_browser.py (`built_site`). The HTML is then read with
the standard library's parser. What the site
must contain is taken from the repository, never from the site's configuration: README.md,
benchmarks/README.md, docs/README.md, every notebooks/*.ipynb, every exercises/*/README.md and
exercises/*/*.ipynb and every public module of specdec (the library the lessons import, with its
subpackages; not the grading engine, grader/) must have a page, each lesson page must show the
outputs committed in its notebook, the sidebar must list the exercises in course order
(exercises.COURSE), every link the repository's Markdown and notebooks write must work on the site,
and every word of every docstring must reach its API page.

Skipped when the site's requirements are not installed (pip install -r requirements-site.txt,
or `make site`, which installs them); .ci/run installs them so CI runs this.
"""

import doctest
import fcntl
import html
import importlib.util
import inspect
import json
import os
import pkgutil
import re
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
EXERCISE_NOTEBOOKS = sorted((REPO / "exercises").glob("*/*.ipynb"))
# The repository's Markdown pages besides the lessons' and exercises': each has a page at its own path.
READMES = [REPO / "README.md", REPO / "exercises" / "README.md", REPO / "benchmarks" / "README.md",
           REPO / "docs" / "README.md"]
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


def built_site(tmp_path_factory):
    """(out, work): the site, built once per test run (cold: a fresh staging folder), for every test file
    that needs it. Under pytest-xdist the workers share it: the first to ask builds it, holding a lock,
    in the run's temporary folder, which all the workers' folders are inside."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "specdec-site"
    root.mkdir(exist_ok=True)
    out, work = root / "html", root / "work"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "built").exists():
            env = {k: v for k, v in os.environ.items() if k != "SPECDEC_REPO_URL"}   # no launch buttons
            proc = subprocess.run([sys.executable, str(REPO / "docs" / "build.py"), "--out", str(out),
                                   "--work", str(work)], capture_output=True, text=True, timeout=600, env=env, cwd=REPO)
            assert proc.returncode == 0, \
                f"the site build failed (warnings are errors):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
            (root / "built").touch()
    return out, work


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site, and every page of it parsed."""
    out, work = built_site(tmp_path_factory)
    # _static/ holds the theme's Jinja macro files (*.html), not pages.
    pages = {path: Page(path.read_text(encoding="utf-8")) for path in sorted(out.rglob("*.html"))
             if "_static" not in path.relative_to(out).parts}
    return out, work, pages


def public_modules():
    """Every importable module of specdec (subpackages included) whose dotted name has no private part."""
    import specdec
    names = ["specdec"]
    for info in pkgutil.walk_packages(specdec.__path__, "specdec."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def test_every_lesson_exercise_and_module_has_a_page(site):
    out, _, _ = site
    assert len(LESSONS) >= 8 and len(EXERCISES) >= 5 and EXERCISE_NOTEBOOKS   # the repository's own files were found
    expected = ["index.html", "search.html", "api.html"]
    expected += [readme.relative_to(REPO).with_suffix(".html").as_posix() for readme in READMES]
    expected += [f"notebooks/{nb.stem}.html" for nb in LESSONS]
    expected += [f"exercises/{readme.parent.name}/README.html" for readme in EXERCISES]
    expected += [f"exercises/{nb.parent.name}/{nb.stem}.html" for nb in EXERCISE_NOTEBOOKS]
    expected += [f"api/{name}.html" for name in public_modules()]
    missing = [page for page in expected if not (out / page).is_file()]
    assert not missing, f"no page for: {missing}"
    # The reference is of the public library: a private module (specdec._checks) has no page, and
    # the grading engine, a package of its own, is not in the learner's reference.
    assert not [page.name for page in (out / "api").glob("*._*.html")]
    assert not list((out / "api").glob("grader*.html"))
    assert {"specdec.batched", "specdec.exact", "specdec.generation", "specdec.models"} <= set(public_modules())


def test_the_sidebar_lists_the_exercises_in_course_order(site):
    # exercises.COURSE is the order the course meets them (ex02 after lesson 01, then ex01, ...), not
    # the folders' file-name order; the sidebar of every page shows the statements in that order.
    from exercises import COURSE
    out, _, pages = site
    want = [f"exercises/{folder}/README.html" for _, folder, _ in COURSE]
    folders = sorted(folder for _, folder, _ in COURSE)
    assert [f.parent.name for f in EXERCISES] == folders, "an exercise folder is not in exercises.COURSE"
    for name in ("index.html", "notebooks/" + LESSONS[0].stem + ".html", want[-1]):
        path, others = (out / name).resolve(), [page for page in want if page != name]   # a page links itself by "#"
        seen = []
        for link in pages[path].links:
            target = resolved(out, path, link)
            rel = target.relative_to(out.resolve()).as_posix() if out.resolve() in target.parents else ""
            if rel in others and rel not in seen:
                seen.append(rel)
        assert seen == others, f"{name}: the exercises appear in the order {seen}"


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
    proc = subprocess.run([sys.executable, str(REPO / "docs" / "build.py"), "--out", str(binder_out),
                           "--work", str(work), "--only", f"notebooks/{lesson.name}", "index.md",
                           "api/specdec.verify.rst"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    page = Page((binder_out / "notebooks" / f"{lesson.stem}.html").read_text(encoding="utf-8"))
    binder = [link for link in page.links if "mybinder.org" in link]
    assert binder, page.links
    assert all(f"notebooks/{lesson.name}" in link and "example/specdec/main" in link for link in binder), binder
    # Edit and issue links: a lesson's edits its notebook, the home page's docs/index.md (mirrored at the
    # site's root), and an API page, generated from docstrings, has no edit link.
    repo = "https://github.com/example/specdec"
    assert f"{repo}/edit/main/notebooks/{lesson.name}" in page.links, page.links
    assert any(link.startswith(f"{repo}/issues") for link in page.links), page.links
    home = Page((binder_out / "index.html").read_text(encoding="utf-8"))
    assert f"{repo}/edit/main/docs/index.md" in home.links, [link for link in home.links if "edit" in link]
    api = Page((binder_out / "api" / "specdec.verify.html").read_text(encoding="utf-8"))
    assert not [link for link in api.links if "/edit/" in link]


def test_math_is_typeset_by_the_mathjax_served_with_the_site(site):
    # Offline, a formula is raw TeX unless MathJax is on the site itself: no page loads anything from
    # the network (tests/test_site_browser.py checks in a browser that every formula is typeset).
    out, _, pages = site
    script = out / "_static" / "mathjax" / "tex-svg.js"
    assert script.is_file() and script.stat().st_size > 1_000_000
    lesson = pages[(out / "notebooks" / f"{LESSONS[2].stem}.html").resolve()]
    assert "../_static/mathjax/tex-svg.js" in lesson.links
    remote = {link for page in pages.values() for link in page.links
              if re.match(r"(https?:)?//[^/]*(cdn|mathjax)", link)}
    assert not remote, remote


def test_glossary_and_bibliography(site):
    # The glossary has an entry (a heading, so a notebook's [KV cache](../docs/glossary.md#kv-cache)
    # resolves) for every term the lessons use without defining; the bibliography lists every paper
    # the lessons and exercises link to on arXiv.
    out, _, pages = site
    glossary = pages[(out / "docs" / "glossary.html").resolve()]
    terms = ["target-p", "draft-q", "draft-length-gamma", "acceptance-rate-alpha", "cost-ratio-c", "rgamma",
             "temperature-t", "roofline", "kv-cache", "total-variation-tv-distance", "bootstrap-interval",
             "witten-bell-backoff", "distillation-distillspec", "on-policy", "nep-19", "wilson-interval", "splitmix64",
             "residual-distribution", "causal-mask", "block-verification", "token-tree", "typical-acceptance"]
    assert not [term for term in terms if term not in glossary.ids], sorted(glossary.ids)
    bibliography = pages[(out / "docs" / "references.html").resolve()].text
    cited = set()
    for source in LESSONS + EXERCISE_NOTEBOOKS + EXERCISES:
        cited |= set(re.findall(r"arxiv\.org/(?:abs|pdf)/(\d{4}\.\d{4,5})", source.read_text(encoding="utf-8")))
    assert cited and not sorted(c for c in cited if c not in bibliography), "add them to docs/references.bib"
    assert "Leviathan" in bibliography and "Roofline" in bibliography


def test_pages_have_their_reading_time_path_and_type_hints(site):
    out, _, pages = site
    for nb_path in LESSONS:
        text = pages[(out / "notebooks" / f"{nb_path.stem}.html").resolve()].text
        assert re.search(r"About \d+ min to read", text), f"{nb_path.name}: no reading time"
    index = pages[(out / "index.html").resolve()].text
    assert "Core: lessons 01 to 06" in index and "Advanced: lessons 07 to 13" in index   # the sidebar's captions
    # The API pages render the annotations; the colour mode is configured (the theme logs an error if not).
    verify = pages[(out / "api" / "specdec.verify.html").resolve()].text
    assert "Sequence[int]" in verify and "in [0, 1]" in verify
    home = (out / "index.html").read_text(encoding="utf-8")
    assert 'data-default-mode="auto"' in home and "navbar-persistent" not in home


def markdown_links(text):
    """The relative targets of the [text](target) links of Markdown `text`, outside fenced code."""
    text = re.sub(r"^\s*(```|~~~).*?^\s*\1", "", text, flags=re.S | re.M)
    return [t for t in re.findall(r"(?<!!)\]\(([^()\s]+)\)", text) if not re.match(r"[a-z]+:|#", t)]


def resolved(out, page_path, link):
    """The file of the site a link on `page_path` points at."""
    return (page_path.parent / unquote(urlsplit(link).path)).resolve()


def test_links_written_for_the_repository_work_on_the_site(site):
    # A lesson links to ../README.md and to an exercise's README and notebook, written for a learner
    # in Jupyter; an exercise's statement links to lessons. Each must be a working link to that page.
    out, _, pages = site
    sources = LESSONS + EXERCISE_NOTEBOOKS + READMES + EXERCISES
    checked = 0
    for source in sources:
        page_path = (out / source.relative_to(REPO)).with_suffix(".html").resolve()
        if source.suffix == ".ipynb":
            cells = json.loads(source.read_text(encoding="utf-8"))["cells"]
            text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        else:
            text = source.read_text(encoding="utf-8")
        targets = {resolved(out, page_path, link) for link in pages[page_path].links}
        for link in markdown_links(text):
            path = (source.parent / link.partition("#")[0]).resolve()
            if path.suffix in (".md", ".ipynb"):        # a page of the site
                want = (out / path.relative_to(REPO)).with_suffix(".html").resolve()
                assert want in targets, f"{source.relative_to(REPO)}: {link} is not a link to {want.relative_to(out)}"
                checked += 1
    assert checked >= 20, checked


def test_the_course_map_links_the_files_it_names(site):
    # README.md names files in code (`specdec/verify.py`, `notebooks/01_x.ipynb`): on the site each
    # module of the public library links to its API page, a lesson or exercise to its page, every other
    # file the repository has to a copy of it. Aside: hidden files (.ci/run: the site copies no .git or
    # .venv), build output (_site/index.html, which a clone lacks) and docs/, the site's own sources.
    out, _, pages = site
    page_path = (out / "README.html").resolve()
    targets = {resolved(out, page_path, link) for link in pages[page_path].links}
    readme = re.sub(r"^```.*?^```", "", (REPO / "README.md").read_text(encoding="utf-8"), flags=re.S | re.M)
    modules, pages_linked, files = 0, 0, []
    for quoted in set(re.findall(r"`([\w./-]+/[\w./-]*)`", readme)):
        path = REPO / quoted
        if not path.is_file() or any(part.startswith(".") for part in Path(quoted).parts) or quoted.startswith("_"):
            continue
        private = any(part.startswith("_") for part in Path(quoted).parts)
        if quoted.startswith("specdec/") and path.suffix == ".py" and not private:
            name = quoted.removesuffix(".py").replace("/", ".")
            assert (out / "api" / f"{name}.html").resolve() in targets, \
                f"README: `{quoted}` does not link to its API page"
            modules += 1
        elif path.suffix in (".ipynb", ".md"):      # a lesson, an exercise: pages
            assert (out / quoted).with_suffix(".html").resolve() in targets, \
                f"README: `{quoted}` does not link to its page"
            pages_linked += 1
        elif not quoted.startswith("docs/"):
            files.append(quoted)
    downloads = [t for t in targets if "_downloads" in t.parts]
    for quoted in files:
        assert any(t.name == Path(quoted).name and t.read_bytes() == (REPO / quoted).read_bytes() for t in downloads), \
            f"README: `{quoted}` is not a link to a copy of the file"
    assert modules >= 3 and pages_linked >= 2 and files, (modules, pages_linked, files)


def test_an_exercise_notebook_comes_after_its_statement(site):
    out, _, pages = site
    for nb in EXERCISE_NOTEBOOKS:
        statement = pages[(out / "exercises" / nb.parent.name / "README.html").resolve()]
        assert statement.classes.get("right-next") == [f"{nb.stem}.html"], nb.name
        page = (out / "exercises" / nb.parent.name / f"{nb.stem}.html").resolve()
        download = f"../../_sources/exercises/{nb.parent.name}/{nb.name}"
        assert download in pages[page].links and resolved(out, page, download).read_bytes() == nb.read_bytes(), nb.name


SMART = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "--", "\u2014": "---",
                       "\u2026": "...", "\u00a0": " "})


def test_every_word_of_every_docstring_reaches_its_page(site):
    # reST is not plain text: `Fraction`s, |z|, `<length>\\n<json>` or `!pip` were silently mangled
    # (a run of text turned into code, a word dropped, a character eaten). Every word of a module's
    # docstring, and of the docstrings of what it defines, must be on its page as written (backquotes
    # aside; napoleon's section titles, such as "Args:", are renamed).
    out, _, pages = site
    mangled = []
    for name in public_modules():
        module = importlib.import_module(name)
        text = pages[(out / "api" / f"{name}.html").resolve()].text.translate(SMART)
        docs = [module.__doc__ or ""]
        for attr, obj in vars(module).items():
            defined = (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == name
            if defined and not attr.startswith("_"):
                docs.append(obj.__doc__ or "")
                if inspect.isclass(obj):
                    docs += [m.__doc__ or "" for k, m in vars(obj).items()
                             if inspect.isfunction(m) and not k.startswith("_")]
        words = {w for doc in docs for w in inspect.cleandoc(doc).replace("`", "").split()}
        mangled += [f"{name}: {w!r}" for w in sorted(words)
                    if w not in text and w.strip(".,;:()*") not in text and w not in ("Args:", "Returns:", "Raises:")]
    assert not mangled, "words not on their API page:\n" + "\n".join(mangled[:40])


def test_plain_text_docstrings_become_the_rest_they_mean():
    # Hand-worked cases of docs/_ext/docstrings.py (no build needed). The first is the shape of
    # specdec.batched.logits's docstring: a formula indented under a bullet's sentence, the bullet's
    # text going on after it, and a sentence right after the list. As reST, unchanged, it is a
    # definition list and two "unexpected unindent" warnings; it must be a literal block inside the
    # item, the item's text after it, and a paragraph after the list.
    sys.path.insert(0, str(REPO / "docs" / "_ext"))
    try:
        import docstrings
    finally:
        sys.path.remove(str(REPO / "docs" / "_ext"))
    lines = ["Intro:", "", "- the test reads p(x), and", "      log p(x) = z - lse(z),", "  one pass;",
             "- stops early.", "Blocks hold BLOCK entries."]
    assert docstrings.literal_blocks(lines) == [
        "Intro:", "", "- the test reads p(x), and", "", "  .. code-block:: text", "",
        "      log p(x) = z - lse(z),", "", "  one pass;", "- stops early.", "", "Blocks hold BLOCK entries."]
    # |z| is an absolute value, not a substitution; `Fraction`s is the name plus an s; code is left alone.
    assert docstrings.literal_blocks(["The largest |z|, as `fractions.Fraction`s; `|x| <a>` stays."]) == [
        "The largest \\|z\\|, as `fractions.Fraction`\\ s; `|x| <a>` stays."]
    # A doctest under a sentence stays a doctest; a formula under a sentence becomes a literal block.
    assert docstrings.literal_blocks(["Example:", "    >>> 1 + 1", "    2"]) == ["Example:", "    >>> 1 + 1", "    2"]
    assert doctest.testmod(docstrings).failed == 0


def test_the_sidebar_order_comes_from_the_course_table():
    # docs/_ext/course_order.py reads exercises.COURSE without importing it (no build needed).
    from exercises import COURSE
    sys.path.insert(0, str(REPO / "docs" / "_ext"))
    try:
        import course_order
    finally:
        sys.path.remove(str(REPO / "docs" / "_ext"))
    assert course_order.course_folders() == [folder for _, folder, _ in COURSE]
    assert doctest.testmod(course_order).failed == 0


def test_the_reading_time_and_the_tagged_formulas():
    # docs/_ext/reading_time.py's count and docs/_ext/portable_markup.py's fix for \tag in a formula of
    # several lines (no build needed): their doctests.
    sys.path.insert(0, str(REPO / "docs" / "_ext"))
    try:
        import portable_markup
        import reading_time
    finally:
        sys.path.remove(str(REPO / "docs" / "_ext"))
    assert doctest.testmod(reading_time).failed == 0 and doctest.testmod(portable_markup).failed == 0
    assert portable_markup.tagged(r"a \\ b \tag{1} \tag{2}") is None     # two tags: left to MathJax
