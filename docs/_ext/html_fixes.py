"""Sphinx extension: two pieces of the HTML Sphinx writes, made what a screen reader expects (axe-core's rules).

- The bibliography is a list (`role="list"`) whose entries say `role="doc-biblioentry"`, a role ARIA 1.3 retired
  and that a list may not hold (axe-core: aria-required-children, critical): each entry is a `listitem`.
- The index of the highlighted source pages (`_modules/index`, sphinx.ext.viewcode) puts a package's list of
  modules straight inside the outer list, beside its items (axe-core: list, serious): each inner list goes
  inside the item of its package.

    >>> nested('<ul><li>a</li>\\n<ul><li>a.b</li>\\n</ul><li>c</li>\\n</ul>')
    '<ul><li>a\\n<ul><li>a.b</li>\\n</ul></li><li>c</li>\\n</ul>'
"""

import re


def nested(body):
    """`body` with each <ul> that follows a </li> moved inside that item."""
    return re.sub(r"</ul>(?=<li>|\n</ul>)", "</ul></li>", re.sub(r"</li>\n<ul>", "\n<ul>", body))


def _page(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if not body:
        return
    body = body.replace('role="doc-biblioentry"', 'role="listitem"')
    if pagename == "_modules/index":
        body = nested(body)
    context["body"] = body


def setup(app):
    app.connect("html-page-context", _page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
