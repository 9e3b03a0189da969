"""Sphinx extension: a citation links to its entry in the bibliography, and the entry links back to it.

The lessons cite a paper the way a reader of the notebook can follow anywhere, JupyterLab and GitHub included:
its authors and year, linked to its arXiv page (`[Leviathan et al. (2023)](https://arxiv.org/abs/2211.17192)`).
On the site such a link goes to the paper's entry on the bibliography page instead (docs/references.md, drawn by
sphinxcontrib-bibtex from docs/references.bib, whose entries get the ids `cite-KEY`: conf.py's bibtex_cite_id),
where the arXiv link is, and each entry ends with links back to every page that cites it, to the citation
itself. A link to an arXiv paper that references.bib lacks stays as written (tests/test_site.py requires the
entry).

    >>> paper_id("https://arxiv.org/abs/2211.17192v2"), paper_id("https://arxiv.org/pdf/2302.01318"), paper_id("x")
    ('2211.17192', '2302.01318', None)
"""

import re
from pathlib import Path

from docutils import nodes

BIB = Path(__file__).resolve().parent.parent / "references.bib"
BIBLIOGRAPHY = "docs/references"
_ARXIV = re.compile(r"^https?://arxiv\.org/(?:abs|pdf)/(\d{4}\.\d{4,5})(?:v\d+)?(?:\.pdf)?/?$")
_DOI = re.compile(r"^https?://(?:dx\.)?doi\.org/(10\.\S+)$")


def paper_id(url):
    """The arXiv number, or the DOI, a link to a paper points at; None for any other link."""
    found = _ARXIV.match(url) or _DOI.match(url)
    return found.group(1) if found else None


def bib_keys():
    """{arXiv number or DOI: bibtex key} for every entry of references.bib with an eprint or a doi."""
    keys = {}
    for entry in re.split(r"^@", BIB.read_text(encoding="utf-8"), flags=re.M)[1:]:
        key = re.match(r"\w+\{([^,\s]+),", entry)
        for field in ("eprint", "doi"):
            value = re.search(rf"^\s*{field}\s*=\s*\{{([^}}]+)\}}", entry, flags=re.M)
            if key and value:
                keys[value.group(1).strip()] = key.group(1)
    return keys


def _cites(app, doctree):
    """Give each arXiv link of the page an id and note it: env.specdec_cites {key: [(docname, id)]}."""
    env = app.env
    if env.docname == BIBLIOGRAPHY:
        return
    keys = bib_keys()
    cites = env.specdec_cites = getattr(env, "specdec_cites", {})
    for n, ref in enumerate(doctree.findall(nodes.reference)):
        key = keys.get(paper_id(ref.get("refuri", "")) or "")
        if key:
            ident = f"cited-{key}-{n}"
            ref["ids"].append(ident)
            ref["specdec_cite"] = key
            cites.setdefault(key, []).append((env.docname, ident))


def _resolve(app, doctree, docname):
    cites = getattr(app.env, "specdec_cites", {})
    target = app.builder.get_relative_uri(docname, BIBLIOGRAPHY).partition("#")[0]
    for ref in doctree.findall(nodes.reference):
        if ref.get("specdec_cite"):
            ref["refuri"] = f"{target}#cite-{ref['specdec_cite']}"
            ref["classes"] = [c for c in ref["classes"] if c != "external"] + ["internal", "specdec-citation"]
            ref["reftitle"] = "The entry in the bibliography"
    if docname != BIBLIOGRAPHY:
        return
    for citation in doctree.findall(nodes.citation):
        key = next((i.removeprefix("cite-") for i in citation["ids"] if i.startswith("cite-")), None)
        where = {}
        for page, ident in cites.get(key, []):
            where.setdefault(page, []).append(ident)
        if not where:
            continue
        para = nodes.paragraph(classes=["specdec-cited"])
        para += nodes.Text("Cited in ")
        for k, (page, idents) in enumerate(sorted(where.items())):
            uri = app.builder.get_relative_uri(docname, page).partition("#")[0]
            title = app.env.titles[page].astext().partition(":")[0] if page in app.env.titles else page
            para += nodes.Text(", " if k else "")
            para += nodes.reference(title, title, refuri=f"{uri}#{idents[0]}", internal=True)
            for m, ident in enumerate(idents[1:], start=2):
                para += nodes.Text(" ")
                para += nodes.reference(str(m), str(m), refuri=f"{uri}#{ident}", internal=True,
                                        reftitle=f"citation {m} on that page")
        para += nodes.Text(".")
        citation += para


def _purge(app, env, docname):
    for key, places in getattr(env, "specdec_cites", {}).items():
        places[:] = [p for p in places if p[0] != docname]


def _merge(app, env, docnames, other):
    env.specdec_cites = getattr(env, "specdec_cites", {})
    for key, places in getattr(other, "specdec_cites", {}).items():
        env.specdec_cites.setdefault(key, []).extend(p for p in places if p[0] in docnames)


def _outdated(app, env, added, changed, removed):
    """A page that cites changed: the bibliography's back-links change too."""
    return [BIBLIOGRAPHY] if (added | changed | removed) - {BIBLIOGRAPHY} else []


def setup(app):
    app.connect("env-get-outdated", _outdated)
    app.connect("doctree-read", _cites)
    app.connect("doctree-resolved", _resolve)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
