"""The whole course as one PDF: `python docs/pdf.py [--out _site/specdec-course.pdf]` (`make pdf`).

Built from the same sources as the website, with what the site already uses: Sphinx writes the course as one
HTML page (its singlehtml builder, reading the doctrees that docs/build.py cached, so nothing is parsed twice;
then the pages LEFT_OUT are cut from it),
and the headless Chromium that tests/test_site_browser.py drives (Debian's, through Playwright) typesets its
formulas with the site's MathJax and prints it (page.pdf). The book holds what a reader of the course reads:
the home page, the lessons, the exercises (statements and notebooks), the glossary and the bibliography; not the
course map, the API reference, the benchmarks' record or this folder's manual, which are about the repository.

What printing changes (PRINT below): a table of contents first, with a link to every part, lesson and exercise
and the page it starts on (Chromium cannot number a page it has not laid out, so the book is printed twice: once
to find the pages, once with them); each lesson and exercise on a new page; folded solutions and hidden code
opened (paper has no toggles); the navigation, buttons and scroll cues left out; code lines that are too long
wrapped and formulas too wide scaled to the page. The PDF gets an outline (bookmarks) from the headings and
page numbers in its footer. tests/test_site_browser.py checks the result: its pages, its outline, its text.
"""

import argparse
import asyncio
import os
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("SPECDEC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# Pages of the site that are about the repository, not the course: left out of the book.
LEFT_OUT = ["README", "api", "api/", "benchmarks/README", "docs/README"]

PRINT = r"""async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  const main = document.querySelector("article.bd-article") || document.body;
  // The home page's toctree captions and the page's own contents drawer are for the screen.
  main.querySelectorAll(".toctree-wrapper p.caption, .bd-sidebar-secondary, #pst-secondary-sidebar")
    .forEach(e => e.remove());
  // Paper has no toggles: open every folded solution, answer and hidden cell.
  for (const d of main.querySelectorAll("details")) d.open = true;
  // The table of contents: every part (h2 of the home page) and every page of the course (h3), with its page.
  const toc = document.createElement("nav");
  toc.className = "specdec-book-toc";
  toc.innerHTML = "<h2>Contents</h2>";
  const list = document.createElement("ol");
  const entries = [];
  for (const h of main.querySelectorAll("section > h2, span[id^='document-'] + section > h3")) {
    const section = h.parentElement;
    if (!section.id) continue;
    const li = document.createElement("li");
    li.className = h.tagName === "H2" ? "part" : "chapter";
    const title = h.cloneNode(true);
    title.querySelectorAll("a.headerlink").forEach(a => a.remove());
    li.innerHTML = `<a href="#${section.id}"><span class="title"></span><span class="page"></span></a>`;
    li.querySelector(".title").textContent = title.textContent.trim();
    list.append(li);
    entries.push([section.id, title.textContent.trim()]);
  }
  toc.append(list);
  const first = main.querySelector("section");
  first.querySelector("h1").after(toc);
  document.documentElement.dataset.theme = "light";
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  return entries;
}"""

CSS = """
@page { size: A4; margin: 16mm 15mm 18mm 15mm; }
html { font-size: 10.5pt; }
.bd-header-article, .bd-sidebar-primary, .bd-sidebar-secondary, .prev-next-area, .bd-footer, .bd-footer-content,
.bd-header, .header-article-items, button, .copybtn, .headerlink, .pst-scrollable-table-container::after,
.reading-time, .skip-link, #pst-back-to-top, .scroll-cue::after { display: none !important; }
.bd-main, .bd-content, .bd-article-container, .bd-page-width, .bd-container, .bd-container__inner {
  max-width: none !important; width: auto !important; padding: 0 !important; margin: 0 !important;
  display: block !important; }
.bd-article :is(p, ul, ol, dl, div.math, div.caption) { max-width: none !important; }
span[id^="document-"] + section { break-before: page; }
.bd-article h1, .bd-article h2, .bd-article h3, .bd-article h4 { break-after: avoid; }
.bd-article pre { white-space: pre-wrap !important; overflow: visible !important; word-break: break-word; }
.bd-article div.math > mjx-container, .bd-article mjx-container { overflow: visible !important; }
.bd-article mjx-container[display="true"] > svg { max-width: 100% !important; height: auto; }
.bd-article img { max-width: 100% !important; width: auto !important; break-inside: avoid; }
.bd-article .pst-scrollable-table-container { overflow: visible !important; }
.bd-article table { font-size: 0.85em; }
.scroll-cue { background: none !important; border-bottom: 0 !important; }
details > summary { list-style: none; font-weight: 600; }
.specdec-book-toc { break-after: page; }
.specdec-book-toc ol { list-style: none; padding: 0; }
.specdec-book-toc li.part { font-weight: 600; margin-top: 0.6em; }
.specdec-book-toc li.chapter { margin-left: 1.2em; }
.specdec-book-toc a { display: flex; color: inherit !important; text-decoration: none; }
.specdec-book-toc .title { flex: 1; }
.specdec-book-toc .page { min-width: 2.5em; text-align: right; }
.specdec-book-toc a .page:empty::after { content: "000"; visibility: hidden; }
"""

FOOTER = ('<div style="font-size:8px;width:100%;text-align:center;color:#57606a">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')


def build_book(work, out):
    """Write the whole site as one HTML page, `out`/index.html, from the staging folder and doctrees of docs/build.py,
    and return the book's page, `out`/book.html: that page without the pages LEFT_OUT."""
    from sphinx.cmd.build import build_main
    status = build_main(["-W", "--keep-going", "-q", "-b", "singlehtml", "-c", str(REPO / "docs"),
                         "-d", str(work / "doctrees"), str(work / "src"), str(out)])
    if status:
        raise SystemExit(f"the one-page build failed ({status})")
    book = out / "book.html"
    book.write_text(without_pages((out / "index.html").read_text(encoding="utf-8"), LEFT_OUT), encoding="utf-8")
    return book


def without_pages(text, names):
    """The one-page HTML `text` without the documents `names` (a name ending in / stands for every page under it):
    each is a <span id="document-NAME"> and the <section> after it, and a line of a list that links to it.

    >>> without_pages('<li class="toctree-l1"><a class="reference internal" href="#document-api">API</a></li><p>a</p>'
    ...               '<span id="document-api"></span><section id="x"><section>y</section></section><p>b</p>', ["api"])
    '<p>a</p><p>b</p>'
    """
    def left_out(name):
        return any(name.startswith(n) if n.endswith("/") else name == n for n in names)
    out, at = [], 0
    for found in re.finditer(r'<span id="document-([^"]+)"></span>\s*(?=<section\b)', text):
        if found.start() < at or not left_out(found.group(1)):
            continue
        depth, end = 0, found.end()
        for tag in re.finditer(r"<(/?)section\b[^>]*>", text[found.end():]):
            depth += -1 if tag.group(1) else 1
            if depth == 0:
                end = found.end() + tag.end()
                break
        out += [text[at:found.start()]]
        at = end
    text = "".join(out + [text[at:]])
    return re.sub(r'<li class="toctree-l\d"><a class="reference internal" href="#document-([^"]+)">.*?</a></li>',
                  lambda m: "" if left_out(m.group(1)) else m.group(0), text)


async def print_book(tab, pdf, page_numbers=True):
    """Print the one-page site loaded in Playwright's `tab` as the book `pdf`. Returns the contents' entries
    [(id, title, page or None)]: their pages are filled in (a second print) only with `page_numbers`."""
    from pypdf import PdfReader
    await tab.emulate_media(media="print")
    await tab.add_style_tag(content=CSS)
    entries = await tab.evaluate(PRINT)
    options = dict(path=str(pdf), outline=True, tagged=True, print_background=True, prefer_css_page_size=True,
                   display_header_footer=True, header_template="<div></div>", footer_template=FOOTER)
    await tab.pdf(**options)
    pages = outline_pages(PdfReader(str(pdf)))
    entries = [(ident, title, pages.get(squashed(title))) for ident, title in entries]
    if page_numbers:
        await tab.evaluate("""(numbers) => document.querySelectorAll(".specdec-book-toc .page")
                              .forEach((span, i) => { span.textContent = numbers[i] ?? ""; })""",
                           [page for _, _, page in entries])
        await tab.pdf(**options)
    return entries


def squashed(title):
    """A heading's words with no spaces: Chromium's outline drops the space where a title broke across lines."""
    return "".join(title.split())


def outline_pages(reader):
    """{squashed title: first page (from 1)} of every entry of a PDF's outline (its bookmarks), at any depth.

    Subtle: a heading whose box Chromium splits between two pages (it keeps a heading with what follows it, and a
    code block that cannot be cut can leave it no room) gets one bookmark whose title is the text twice; it is read
    as the text once.
    """
    pages = {}

    def walk(items):
        for item in items:
            if isinstance(item, list):
                walk(item)
            else:
                title = squashed(item.title)
                half = len(title) // 2
                if len(title) % 2 == 0 and title[:half] == title[half:]:
                    title = title[:half]
                pages.setdefault(title, reader.get_destination_page_number(item) + 1)
    walk(reader.outline)
    return pages


async def open_page(browser, page):
    """A tab of `browser` with the one-page site `page` loaded, offline, and its formulas typeset."""
    tab = await browser.new_page()
    await tab.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    await tab.goto(page.as_uri(), timeout=180_000)
    await tab.evaluate("async () => { if (window.MathJax && MathJax.startup) await MathJax.startup.promise; }")
    return tab


async def _make(page, pdf):
    from playwright.async_api import async_playwright
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            return await print_book(await open_page(browser, page), pdf)
        finally:
            await browser.close()


def make_pdf(work, pdf):
    """Build the book from the staging folder `work` of docs/build.py into `pdf`; return its contents' entries."""
    page = build_book(work, work / "singlehtml")
    pdf.parent.mkdir(parents=True, exist_ok=True)
    return asyncio.run(_make(page, pdf))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "_site" / "specdec-course.pdf"), help="the PDF to write")
    parser.add_argument("--work", default=str(REPO / "_build" / "site"),
                        help="docs/build.py's staging and cache folder (default: _build/site; build the site first)")
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    work = Path(args.work).resolve()
    if not (work / "doctrees" / "environment.pickle").is_file():
        parser.error(f"{work} holds no build of the site: run `make site` (docs/build.py) first")
    entries = make_pdf(work, Path(args.out).resolve())
    from pypdf import PdfReader
    print(f"{args.out}: {len(PdfReader(args.out).pages)} pages; its contents list {len(entries)} parts and pages, "
          f"{sum(page is not None for *_, page in entries)} with the page they start on")
    return 0


if __name__ == "__main__":
    sys.exit(main())
