"""The course website as a reader sees it: laid out in a real browser, offline.

Headless Debian Chromium, driven by Playwright (requirements-site.txt; no browser download: the system's
chromium on the PATH, or $SPECDEC_CHROMIUM). Every request that is not a file of the built site is blocked, so
the site must work with no network. On the home page, the glossary and every lesson
and exercise page:

- at 1400 px, no code or output block scrolls sideways (its scrollWidth at most its clientWidth + 1), and no
  display formula is wider than its column unless its box scrolls and shows the scroll cue (docs/_static);
- every formula was typeset by the MathJax the build installed: MathJax containers are on the page, no
  raw TeX delimiter (\\( or $$) is left in its text, and MathJax reported no error;
- at 400 px, the page itself does not scroll sideways.

One browser for all pages, one build shared with tests/test_site.py (`built_site`). Run as a script,
`python tests/test_site_browser.py [SITE]` (default _site/, from `make site`), it prints what overflows,
page by page, with the first 60 characters of each block: the notebook authors' to-do list.
"""

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("SPECDEC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
WIDE, NARROW = 1400, 400

# In the page: what overflows. A block is a code cell, an output or a <pre>; a formula is MathJax's display
# container, measured against its column (the article), and allowed to be wider only inside a scroll box that
# shows the cue (class scroll-cue, set by docs/_static/specdec.js on a box whose content is wider than it).
MEASURE = r"""() => {
  const hint = el => (el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 60);
  const article = document.querySelector('article.bd-article') || document.body;
  const blocks = [], formulas = [];
  for (const el of article.querySelectorAll('pre, div.highlight, div.output, div.cell_output')) {
    if (el.scrollWidth > el.clientWidth + 1) blocks.push([hint(el), el.scrollWidth, el.clientWidth]);
  }
  const column = article.getBoundingClientRect();
  for (const m of article.querySelectorAll('mjx-container[display="true"]')) {
    const math = m.firstElementChild || m;
    const wide = math.getBoundingClientRect().width;
    let box = m, scrolls = false;
    for (; box && box !== article; box = box.parentElement) {
      const x = getComputedStyle(box).overflowX;
      if (x === 'auto' || x === 'scroll') { scrolls = true; break; }
    }
    const fits = wide <= (scrolls ? box.clientWidth : Math.min(m.clientWidth, column.width)) + 1;
    if (!fits && !(scrolls && box.classList.contains('scroll-cue')))
      formulas.push([(m.querySelector('mjx-assistive-mml, title') || m).textContent.slice(0, 60)
                     || hint(m.parentElement), Math.round(wide), Math.round(column.width)]);
  }
  const text = article.innerText;
  const raw = ['$$', '\\(', '\\[', '\\begin{'].filter(d => text.includes(d));
  const errors = [...article.querySelectorAll('[data-mjx-error], mjx-merror')].map(e =>
    (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 60));
  return {blocks, formulas, raw, errors, typeset: article.querySelectorAll('mjx-container').length,
          page: [document.scrollingElement.scrollWidth, window.innerWidth]};
}"""


# Wait for MathJax to typeset the page (a page without math has none), then two frames, so that the
# page's ResizeObserver (docs/_static/specdec.js) has marked the boxes that scroll.
TYPESET = """async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
}"""


def site_pages(out):
    """The pages to check, as paths relative to `out`: the home page, the glossary, every lesson and every
    exercise page (statement and notebook)."""
    pages = ["index.html", "docs/glossary.html"]
    pages += sorted(p.relative_to(out).as_posix() for p in (out / "notebooks").glob("*.html"))
    return pages + sorted(p.relative_to(out).as_posix() for p in (out / "exercises").glob("*/*.html"))


def measure_site(out, pages=None):
    """{page: {"wide": measures at 1400 px, "narrow": at 400 px}} for every lesson and exercise page."""
    from playwright.sync_api import sync_playwright
    pages = pages or site_pages(out)
    results = {page: {} for page in pages}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            context = browser.new_context(viewport={"width": WIDE, "height": 900})
            context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                          else route.abort())
            tab = context.new_page()
            for page in pages:
                # Each page is loaded once, measured wide, then narrow (MathJax's SVG does not depend on the width).
                tab.set_viewport_size({"width": WIDE, "height": 900})
                tab.goto((out / page).as_uri())
                tab.evaluate(TYPESET)
                results[page]["wide"] = tab.evaluate(MEASURE)
                tab.set_viewport_size({"width": NARROW, "height": 900})
                tab.evaluate(TYPESET)
                results[page]["narrow"] = tab.evaluate(MEASURE)
        finally:
            browser.close()
    return results


def problems(results):
    """Lines saying what overflows, page by page (empty: nothing does)."""
    lines = []
    for page, got in results.items():
        wide, narrow = got["wide"], got["narrow"]
        found = [f"  block {w} > {c} px: {hint!r}" for hint, w, c in wide["blocks"]]
        found += [f"  formula {w} > {c} px: {hint!r}" for hint, w, c in wide["formulas"]]
        found += [f"  raw TeX left on the page: {d}" for d in wide["raw"]]
        found += [f"  MathJax error: {e!r}" for e in wide["errors"]]
        if narrow["page"][0] > narrow["page"][1]:
            found.append(f"  at {NARROW} px the page scrolls sideways: {narrow['page'][0]} px wide")
        if found:
            lines += [page, *found]
    return lines


def browser_missing():
    """Why the test cannot run here, or None."""
    if any(importlib.util.find_spec(name) is None for name in ("sphinx", "myst_nb", "sphinx_book_theme")):
        return "the site's requirements are not installed (pip install -r requirements-site.txt, or `make site`)"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (pip install -r requirements-site.txt)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set SPECDEC_CHROMIUM)"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(browser_missing()), reason=str(browser_missing()))]


def test_pages_fit_and_every_formula_is_typeset_offline(tmp_path_factory):
    from test_site import built_site
    out = built_site(tmp_path_factory)[0]
    pages = site_pages(out)
    assert len(pages) >= 20, pages
    results = measure_site(out, pages)
    untypeset = [page for page, got in results.items() if not got["wide"]["typeset"]
                 and 'class="math' in (out / page).read_text(encoding="utf-8")]
    assert not untypeset, f"MathJax typeset nothing on {untypeset} (is it installed, and loaded offline?)"
    found = problems(results)
    assert not found, "what overflows (see docs/README.md, Layout):\n" + "\n".join(found)


if __name__ == "__main__":
    site = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "_site").resolve()
    report = problems(measure_site(site))
    print("\n".join(report) if report else "nothing overflows")
