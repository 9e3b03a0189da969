r"""Sphinx extension: the lessons' numbered things are links, and so is every mention of them.

The notebooks number their theorems, lemmas, definitions, examples, remarks, exercises and figures by lesson
(`**Theorem 3.2 (...).**` at the start of a paragraph, `**Figure 3.1.**` in a caption) and their display
equations with `\tag{3.5}`, and refer to them in words: "by Theorem 3.2", "Figure 3.1 shows", "(3.5)" (docs/README.md,
"Writing a lesson"). JupyterLab shows all of that as text. On the site:

- each label is a link to itself (its number can be copied as an address) and its paragraph gets an id,
  `theorem-03-2`; a figure's is the id of its caption, `fig-03-1` (the convention's `<div class="caption"
  id="fig-03-1">`), a display equation's `eq-03-5` (its number, drawn by MathJax inside an SVG that screen readers skip,
  stays text: a link there could take the keyboard's focus where nothing can be read);
- each mention of a label that exists, on any lesson or exercise page, becomes a link to it, on the same page
  or another ("Theorem 3.2 of lesson 03" from lesson 05). A mention of a number no label has stays text;
- a proof's end mark, the author's `$\blacksquare$` (or `$\square$`), gets the class `qed`, which the stylesheet
  sets at the right end of the line.

Only pages under notebooks/ and exercises/ have their labels linked: docs/README.md shows the markup with example
numbers. End marks are set on every page.

    >>> label_id("Theorem", "3", "2"), label_id("Figure", "12", "1"), label_id("eq", "3", "5")
    ('theorem-03-2', 'fig-12-1', 'eq-03-5')
    >>> [m.group(0) for m in MENTION.finditer("By Theorem 3.2 and (3.5), not (0.65) nor Figure 3.")]
    ['Theorem 3.2', '(3.5)', '(0.65)']
"""

import re

from docutils import nodes

PAGES = ("notebooks/", "exercises/")
KINDS = "Theorem|Lemma|Definition|Corollary|Proposition|Exercise|Example|Remark|Figure|Table"
LABEL = re.compile(rf"^({KINDS}) (\d+)\.(\d+)\b")
MENTION = re.compile(rf"\b({KINDS})s? (\d+)\.(\d+)\b|\((\d+)\.(\d+)\)")
TAG = re.compile(r"\\tag\{(\d+)\.(\d+)\}")
QED = {r"\blacksquare", r"\square", r"\Box", r"\blacksquare."}


def label_id(kind, chapter, number):
    prefix = {"Figure": "fig", "eq": "eq"}.get(kind, kind.lower())
    return f"{prefix}-{int(chapter):02d}-{number}"


def _labels(app, doctree):
    """Collect the page's labels into env.specdec_labels {(kind, "3.2"): (docname, id)}; give each its id."""
    env = app.env
    for math in doctree.findall(nodes.math):
        if math.astext().strip() in QED:
            math["classes"].append("qed")
    if not env.docname.startswith(PAGES):
        return
    labels = env.specdec_labels = getattr(env, "specdec_labels", {})
    ids = set(doctree.ids)
    raw_ids = set(re.findall(r'id="([^"]+)"', "".join(n.astext() for n in doctree.findall(nodes.raw))))
    for strong in list(doctree.findall(nodes.strong)):
        paragraph = strong.parent
        if not isinstance(paragraph, nodes.paragraph) or any(
                not isinstance(child, nodes.Text) or child.strip() for child in paragraph[:paragraph.index(strong)]):
            continue        # a label opens its paragraph (MyST may leave an empty text before it)
        found = LABEL.match(strong.astext())
        if not found:
            continue
        kind, chapter, number = found.groups()
        key, ident = (kind, f"{int(chapter)}.{number}"), label_id(kind, chapter, number)
        if ident not in raw_ids:            # the caption's <div id="fig-03-1"> carries it already
            if ident in ids:
                continue
            paragraph["ids"].append(ident)
            ids.add(ident)
        labels.setdefault(key, (env.docname, ident))
        link = nodes.reference("", "", *strong.children, refuri="#" + ident, classes=["specdec-label"])
        strong.children = [link]
        link.parent = strong
    for math in doctree.findall(nodes.math_block):
        found = TAG.search(math.astext())
        if found:
            ident = label_id("eq", *found.groups())
            if ident not in ids:
                math["ids"].append(ident)
                ids.add(ident)
                labels.setdefault(("eq", f"{int(found.group(1))}.{found.group(2)}"), (env.docname, ident))


def _numbers_link(app, doctree, docname):
    """At write time: every mention of a label links to it."""
    if not docname.startswith(PAGES):
        return
    labels = getattr(app.env, "specdec_labels", {})

    def uri(key):       # on the same page, or (one page for the whole book: singlehtml) "#...": the id alone
        where, ident = labels[key]
        page = "" if where == docname else app.builder.get_relative_uri(docname, where)
        return page.partition("#")[0] + "#" + ident

    skip = (nodes.reference, nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.raw,
            nodes.title, nodes.FixedTextElement)
    for text in list(doctree.findall(nodes.Text)):
        parent = text.parent
        if any(isinstance(a, skip) for a in _ancestors(parent)):
            continue
        value, pieces, at = str(text), [], 0
        for found in MENTION.finditer(value):
            kind, chapter, number = (found.group(1), found.group(2), found.group(3)) if found.group(1) else \
                ("eq", found.group(4), found.group(5))
            key = (kind, f"{int(chapter)}.{number}")
            if key not in labels:
                continue
            pieces += [nodes.Text(value[at:found.start()]),
                       nodes.reference(found.group(0), found.group(0), refuri=uri(key), internal=True,
                                       classes=["specdec-ref"])]
            at = found.end()
        if pieces:
            pieces.append(nodes.Text(value[at:]))
            index = parent.index(text)
            parent[index:index + 1] = [piece for piece in pieces if not (isinstance(piece, nodes.Text) and not piece)]


def _ancestors(node):
    while node is not None:
        yield node
        node = node.parent


def _purge(app, env, docname):
    labels = getattr(env, "specdec_labels", {})
    for key in [key for key, (where, _) in labels.items() if where == docname]:
        del labels[key]


def _merge(app, env, docnames, other):
    env.specdec_labels = getattr(env, "specdec_labels", {})
    env.specdec_labels.update({k: v for k, v in getattr(other, "specdec_labels", {}).items() if v[0] in docnames})


def setup(app):
    app.connect("doctree-read", _labels)
    app.connect("doctree-resolved", _numbers_link)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
