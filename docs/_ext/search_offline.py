"""Sphinx extension: the site's search works from file:// too, with excerpts, and forgives a typo.

Sphinx's search page finds pages in searchindex.js, then fetches each page it found to cut an excerpt around the
words. A page opened from file:// may not fetch another file (the browser refuses, and logs two errors per result),
so a reader of the downloaded site got titles only. The build therefore also writes the text of every page into
_static/specdec_search_texts.js (loaded by the search page only), and _static/specdec_search.js answers the search
page's fetch of a page from it when the page is on file:// (over http the page itself is fetched, as Sphinx does).

And a word no page has, which Sphinx answers with nothing ("acceptanse"), is replaced by the indexed word closest to
it (a short edit distance, compared with the word's beginning: the index holds stems, such as "accept"), and the
results say so.

    >>> text_of('<h2>T<a class="headerlink" href="#t">#</a></h2><p>a <b>b</b></p><script>x</script>')
    'T a b'
"""

import html
import json
import re
from pathlib import Path

TEXTS = "specdec_search_texts.js"
_TAGS = re.compile(r"<(script|style)\b.*?</\1>|<a class=\"headerlink\"[^>]*>.*?</a>|<[^>]+>", re.S)


def text_of(body):
    """The words of a page's HTML body, as one line."""
    return " ".join(html.unescape(_TAGS.sub(" ", body)).split())


def _store(app):
    return Path(app.outdir) / "_static" / (TEXTS.removesuffix(".js") + ".json")


def _page(app, pagename, templatename, context, doctree):
    if app.builder.name != "html":
        return
    if pagename == "search":
        app.builder.add_js_file(TEXTS)
        app.builder.add_js_file("specdec_search.js")
    elif context.get("body") and doctree is not None:
        app.env.specdec_texts_written = getattr(app.env, "specdec_texts_written", {})
        app.env.specdec_texts_written[pagename] = text_of(context["body"])


def _finished(app, exc):
    if exc is not None or app.builder.name != "html":
        return
    store = _store(app)
    texts = json.loads(store.read_text(encoding="utf-8")) if store.is_file() else {}
    texts.update(getattr(app.env, "specdec_texts_written", {}))
    texts = {page: text for page, text in texts.items() if page in app.env.found_docs}   # pages deleted since: gone
    app.env.specdec_texts_written = {}
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
    (store.parent / TEXTS).write_text("window.SPECDEC_TEXTS = " + json.dumps(texts, ensure_ascii=False) + ";\n",
                                      encoding="utf-8")


def setup(app):
    app.connect("html-page-context", _page)
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": True, "parallel_write_safe": False}
