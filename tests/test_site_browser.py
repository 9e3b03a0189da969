"""The course website and its PDF as a reader meets them: laid out in a real browser, offline, at 1400 and 400 px,
light and dark, checked by axe-core, searched from file://, and printed.

Headless Debian Chromium, driven by Playwright (requirements-site.txt; no browser download: the system's chromium on
the PATH, or $SPECDEC_CHROMIUM), and axe-core from the npm registry (`make site-setup` installs it into
.venv/node_modules). Every request that is not a file of the built site is blocked: the site must work offline.

How it stays within its time: the course is also built as one page, the book (docs/pdf.py: Sphinx's singlehtml
builder, reading the doctrees of the same build), loaded and typeset once, measured by tests/site_audit.js at 1400
and 400 px (which says on which page of the course each problem lies) and then printed as the course's PDF (`make
pdf`). Meanwhile, in a second tab, a page of each kind of the site (KINDS: home, a lesson, the lesson with the
grader's report, the exercises' page, an exercise notebook, the bibliography, the benchmarks, two API pages, a
source page, the index) is measured in light and dark mode, with what depends on its template (the page's
contents list, the page's own width), and run through axe-core's WCAG 2.1 A and AA rules, light, and its colour
rules again in dark mode. `make site-check` measures every page of the site that way, one by one.

What must hold, on every page (tests/site_audit.js says how each is measured):
- no equation, code block, output, table, figure or API signature extends past the box that holds it, on either
  side (left of a scroll box is never reachable; right of one is, when the box shows the scroll cue of
  docs/_static/specdec.js), and nothing is wider than the window;
- every formula typeset by the MathJax the build installed, no TeX left raw, no MathJax error;
- text at a contrast of at least 4.5:1, light and dark (outputs, the grader's report included);
- every figure with alt text that describes it (not a file name) and a caption aligned with it, shown at 400 px at
  no less than 75% of the size it was drawn at, and in dark mode on a light card, undimmed;
- prose lines of at most 90 characters at 1400 px, the page's contents list beside them from 1200 px;
- answers folded when the page loads, every code cell with its copy button;
- on the pages of each kind: no serious or critical axe-core violation, no console error;
- search from file:// shows excerpts, forgives a typo, and logs no error;
- the PDF: the course in order, with its contents, outline, figures and typeset formulas.

The pages of the notebooks in PENDING are being rewritten to the conventions of docs/README.md ("Writing a lesson"):
their test is expected to fail (xfail, strict: take a page off the list the day it passes). Run as a script,
`python tests/test_site_browser.py [SITE] [PAGE ...]` (`make site-check`) measures every page of a built site
(default _site/) one by one, axe-core included, and prints every problem: the authors' to-do list.
"""

import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "docs"))
import pdf  # noqa: E402  (docs/pdf.py: the one-page build and the printing)

CHROMIUM = pdf.CHROMIUM
AXE = REPO / ".venv" / "node_modules" / "axe-core" / "axe.min.js"
AUDIT = (Path(__file__).parent / "site_audit.js").read_text(encoding="utf-8")
WIDE, NARROW = 1400, 400
MODES = [(WIDE, "light"), (NARROW, "light"), (WIDE, "dark")]    # the colours do not depend on the width
LIGHT = MODES[:2]             # the book: its colours are the site's, checked on the pages of each kind
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
COLOUR_RULES = ["color-contrast", "link-in-text-block"]   # run again in dark mode; the others do not change with it
# One page of each kind of the real site, for what depends on the page's template and for axe-core.
KINDS = ["index.html", "notebooks/01_logits_to_probabilities.html", "notebooks/04_verify_step_by_step.html",
         "exercises/README.html", "exercises/ex01_verify/ex01_verify.html", "docs/references.html",
         "benchmarks/README.html", "api/specdec.batched.html", "api/specdec.models.transformer.html",
         "_modules/specdec/verify.html", "genindex.html"]
# Being rewritten by their authors to the conventions of docs/README.md ("Writing a lesson"): figures with alt text
# and captions, answers folded by an HTML <details> output. Their pages fail until then.
PENDING = {f"notebooks/{name}.html": "being rewritten to the conventions of docs/README.md (issue 27, second phase)"
           for name in ()}

# Measured at rest: no colour or size halfway through one of the theme's transitions (a mode switch fades in).
STILL = "*, *::before, *::after { transition: none !important; animation: none !important; }"
SETTLE = """async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
}"""
THEME = """async (theme) => {
  document.documentElement.dataset.theme = theme;
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
}"""
AXE_RUN = """async ([tags, rules]) => {
  const options = {runOnly: rules ? {type: "rule", values: rules} : {type: "tag", values: tags},
                   resultTypes: ["violations"], preload: false};   // no stylesheet fetched: file:// refuses it
  const found = await axe.run(document, options);
  return found.violations.filter(v => v.impact === "serious" || v.impact === "critical")
    .map(v => [v.impact, v.id, v.nodes.length, v.nodes.slice(0, 3).map(n => n.target.join(" ") + " "
               + (n.failureSummary || "").split("\\n").slice(1, 2).join(""))]);
}"""


def book_docs():
    """The pages of the book, as Sphinx names them (notebooks/01_x), found in the repository: the home page, every
    lesson, the exercises' page, every exercise statement and notebook, the glossary and the bibliography."""
    names = ["index", "exercises/README", "docs/glossary", "docs/references"]
    names += [f"notebooks/{nb.stem}" for nb in sorted((REPO / "notebooks").glob("*.ipynb"))]
    names += [f"exercises/{p.parent.name}/{p.stem}" for p in sorted((REPO / "exercises").glob("*/README.md"))]
    names += [f"exercises/{p.parent.name}/{p.stem}" for p in sorted((REPO / "exercises").glob("*/*.ipynb"))]
    return names


async def _audit(tab, modes=MODES, book=False):
    """{mode: audit} for the page loaded in `tab`, in `modes`."""
    got = {}
    for width, theme in modes:
        await tab.set_viewport_size({"width": width, "height": 900})
        await tab.evaluate(THEME, theme)
        await tab.evaluate(SETTLE)
        got[f"{width} {theme}"] = await tab.evaluate(AUDIT, {"width": width, "theme": theme, "book": book})
    return got


async def _page(context, out, page, axe=True, modes=MODES):
    """Everything measured on one page of the site: its audit in `modes`, axe-core (`axe`), its console."""
    tab = await context.new_page()
    errors = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    try:
        await tab.set_viewport_size({"width": WIDE, "height": 900})
        await tab.goto((out / page).as_uri())
        await tab.add_style_tag(content=STILL)
        await tab.evaluate(SETTLE)
        got = await _audit(tab, modes)
        if axe and AXE.is_file():
            await tab.add_script_tag(path=str(AXE))
            for theme, rules in (("light", None), ("dark", COLOUR_RULES)):
                await tab.set_viewport_size({"width": WIDE, "height": 900})
                await tab.evaluate(THEME, theme)
                got[f"axe {theme}"] = await tab.evaluate(AXE_RUN, [AXE_TAGS, rules])
        got["console"] = errors
        return got
    finally:
        await tab.close()


SEARCH = """async () => {
  const wait = async (test) => { for (let i = 0; i < 100 && !test(); i++) await new Promise(r => setTimeout(r, 50)); };
  await wait(() => document.querySelector("#search-results p.search-summary, #search-results .search-summary"));
  await wait(() => [...document.querySelectorAll("#search-results li")].some(li => li.querySelector("p.context")));
  await new Promise(r => setTimeout(r, 300));
  const items = [...document.querySelectorAll("#search-results li")];
  const excerpt = li => (li.querySelector("p.context")?.textContent || "").trim();
  return {results: items.length, excerpts: items.filter(li => excerpt(li).length > 20).length,
          note: (document.querySelector("#search-results .specdec-typo") || {}).textContent || "",
          summary: (document.querySelector("#search-results .search-summary") || {}).textContent || ""};
}"""


async def _search(context, out, query):
    tab = await context.new_page()
    errors = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    try:
        await tab.goto((out / "search.html").as_uri() + "?q=" + query)
        got = await tab.evaluate(SEARCH)
        got["console"] = errors
        return got
    finally:
        await tab.close()


async def _book(browser, book, pdf_path):
    """The book: its audit at 1400 and 400 px, then printed as the course's PDF, once (the contents' page numbers,
    `make pdf`'s second print, are read from the same outline this test checks)."""
    tab = await pdf.open_page(browser, book)
    try:
        await tab.add_style_tag(content=STILL)
        started = time.perf_counter()
        got = await _audit(tab, LIGHT, book=True)
        got["audit seconds"] = time.perf_counter() - started
        got["pdf entries"] = await pdf.print_book(tab, pdf_path, page_numbers=False)
        got["print seconds"] = time.perf_counter() - started - got["audit seconds"]
        return got
    finally:
        await tab.close()


async def _offline(pw):
    """Chromium, and a context at the wide width that loads file: addresses only: the site must work offline."""
    browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    context = await browser.new_context(viewport={"width": WIDE, "height": 900})
    await context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                        else route.abort())
    return browser, context


async def _everything(out, book, pdf_path):
    from playwright.async_api import async_playwright
    async with async_playwright() as pw:
        browser, context = await _offline(pw)
        try:

            async def kinds():
                found = {}
                for page in KINDS:
                    started = time.perf_counter()
                    found[page] = await _page(context, out, page)
                    found[page]["seconds"] = time.perf_counter() - started
                found["search acceptance rule"] = await _search(context, out, "acceptance+rule")
                found["search acceptanse"] = await _search(context, out, "acceptanse")
                return found
            return await asyncio.gather(_book(browser, book, pdf_path), kinds())
        finally:
            await browser.close()


def problems(got, doc=None):
    """Lines saying what is wrong with a page (empty: nothing), each with the modes it was seen in; `doc`: only the
    problems on that page of the book."""
    modes = {}
    for mode, audit in got.items():
        if mode.startswith("axe"):
            lines = [f"axe: {impact} {rule} on {n} elements: {'; '.join(where)}" for impact, rule, n, where in audit]
        elif mode == "console":
            lines = [f"console error: {text[:160]}" for text in audit]
        elif isinstance(audit, dict) and "problems" in audit:
            lines = [f"{kind}: {text}" for kind, text, where in audit["problems"] if doc is None or where == doc]
        else:
            continue
        for line in lines:
            modes.setdefault(line, []).append(mode.removeprefix("axe "))
    return [f"{line} ({', '.join(dict.fromkeys(seen))})" for line, seen in modes.items()]


def browser_missing():
    """Why the test cannot run here, or None."""
    if any(importlib.util.find_spec(name) is None for name in ("sphinx", "myst_nb", "sphinx_book_theme", "pypdf")):
        return "the site's requirements are not installed (pip install -r requirements-site.txt, or `make site-setup`)"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (pip install -r requirements-site.txt)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set SPECDEC_CHROMIUM)"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(browser_missing()), reason=str(browser_missing()))]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """Everything measured, once: (the book's audit, {page of each kind: its measures}, the PDF, seconds taken)."""
    from test_site import built_site
    out, work = built_site(tmp_path_factory)
    assert AXE.is_file(), f"axe-core is not installed at {AXE}: run `make site-setup` (npm install axe-core)"
    started = time.perf_counter()
    book = pdf.build_book(work, work / "singlehtml")
    pdf_path = work / "specdec-course.pdf"
    built = time.perf_counter() - started
    audit, pages = asyncio.run(_everything(out, book, pdf_path))
    audit["book build seconds"] = built
    if os.environ.get("SPECDEC_AUDIT_JSON"):
        Path(os.environ["SPECDEC_AUDIT_JSON"]).write_text(json.dumps([audit, pages], indent=1))
    return audit, pages, pdf_path, time.perf_counter() - started


def _pending(name, page):
    return pytest.param(name, marks=[pytest.mark.xfail(strict=True, reason=PENDING[page])] if page in PENDING else [])


@pytest.mark.parametrize("doc", [_pending(doc, doc + ".html") for doc in book_docs()])
def test_every_page_of_the_course_fits_reads_and_shows_its_figures(measured, doc):
    found = problems(measured[0], doc)
    assert not found, f"{doc} (docs/README.md, 'Writing a lesson' and 'Layout'):\n" + "\n".join(found)


@pytest.mark.parametrize("page", [_pending(page, page) for page in KINDS])
def test_a_page_of_each_kind_in_both_modes_and_under_axe_core(measured, page):
    found = problems(measured[1][page])
    assert not found, f"{page} (docs/README.md, 'Layout'):\n" + "\n".join(found)


def test_every_formula_is_typeset_offline(measured):
    assert measured[0][f"{WIDE} light"]["typeset"] > 1000, "MathJax typeset almost nothing: installed, loaded offline?"
    assert measured[1]["notebooks/01_logits_to_probabilities.html"][f"{WIDE} light"]["typeset"] > 20


def test_search_from_file_shows_excerpts_and_forgives_a_typo(measured):
    pages = measured[1]
    exact, typo = pages["search acceptance rule"], pages["search acceptanse"]
    assert exact["results"] >= 5 and exact["excerpts"] >= 5, exact
    assert typo["results"] >= 5 and "“acceptanse”: results for “accept”" in typo["note"], typo
    assert not exact["console"] and not typo["console"], exact["console"] + typo["console"]


def test_the_course_pdf(measured):
    # The book: the home page, every lesson and exercise, the glossary and the bibliography, each found in its
    # outline (its bookmarks, which `make pdf` numbers its contents from), formulas typeset (no TeX delimiter left
    # in its text), figures in it; the pages about the repository (API, benchmarks, the site's manual) left out.
    from pypdf import PdfReader
    audit, _, path, _ = measured
    entries = audit["pdf entries"]
    reader = PdfReader(str(path))
    if shutil.which("pdftotext"):       # poppler-utils (.ci/run installs it): a second, where pypdf takes a minute
        text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
    else:
        text = "\n".join(page.extract_text() or "" for page in reader.pages)
    outline = pdf.outline_pages(reader)
    lessons = sorted((REPO / "notebooks").glob("*.ipynb"))
    assert len(reader.pages) >= 8 * len(lessons), f"{len(reader.pages)} pages for {len(lessons)} lessons"
    titles = [title for _, title, _ in entries]
    for nb in lessons:
        title = json.loads(nb.read_text(encoding="utf-8"))["cells"][0]["source"][0].lstrip("# ").strip()
        assert any(pdf.squashed(title) == pdf.squashed(t).replace("\u2019", "'") for t in titles), \
            f"{nb.name} is not in the contents"
    assert sum(pdf.squashed(t) in outline for t in titles) == len(titles), "contents entries missing from the outline"
    assert "Glossary and notation" in titles and "Bibliography" in titles, titles
    for raw in ("\\frac", "\\min", "\\(", "$$", "\\begin{", "\\tag"):
        assert raw not in text, f"raw TeX {raw!r} in the PDF's text"
    assert "specdec.verify.verify_speculative_tokens(" not in text      # the API reference is left out
    images = sum(1 for page in reader.pages for x in (page["/Resources"].get("/XObject") or {}).values()
                 if x.get_object().get("/Subtype") == "/Image")
    figures = sum("image/png" in o.get("data", {}) for nb in lessons
                  for c in json.loads(nb.read_text(encoding="utf-8"))["cells"] for o in c.get("outputs", []))
    assert images >= figures, f"{images} images in the PDF, {figures} figures in the lessons"


# ---- As a script: every page of a built site, one by one, axe-core included (`make site-check`) ----------------
async def _every_page(out, pages):
    from playwright.async_api import async_playwright
    results = {}
    async with async_playwright() as pw:
        browser, context = await _offline(pw)
        try:
            queue = list(pages)

            async def worker():
                while queue:
                    page = queue.pop(0)
                    results[page] = await _page(context, out, page)
            await asyncio.gather(worker(), worker())
        finally:
            await browser.close()
    return results


def every_page(out):
    skip = {"_static", "_sources", "_downloads", "_images"}
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html")
                  if not skip & set(p.relative_to(out).parts))


if __name__ == "__main__":
    site = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "_site").resolve()
    started = time.perf_counter()
    results = asyncio.run(_every_page(site, sys.argv[2:] or every_page(site)))
    if os.environ.get("SPECDEC_AUDIT_JSON"):
        Path(os.environ["SPECDEC_AUDIT_JSON"]).write_text(json.dumps(results, indent=1))
    bad = 0
    for page, got in results.items():
        found = problems(got)
        if found:
            bad += 1
            print(page + (f"  (pending: {PENDING[page]})" if page in PENDING else ""))
            print("\n".join("  " + line for line in found))
    print(f"{len(results)} pages, {bad} with problems, in {time.perf_counter() - started:.0f} s")
