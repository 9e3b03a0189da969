"""Sphinx extension: the library's plain-text docstrings, shown on the API pages as their author laid them out.

The library's docstrings are written for help() and doctest, not for reStructuredText: a formula
or a table is an indented block under a sentence. Parsed as reST, such a block becomes a quote or
a definition list, and its line breaks and alignment are lost. So each indented run of lines under
a plain paragraph becomes a literal block (`code-block:: text`), unless it is a doctest (reST
shows those as code already). The text of a list item is read the same way (a formula indented
under an item's sentence is a literal block inside the item); indented lines under a field
(napoleon's output) or a directive are left alone: they continue it. Where reST wants a blank line
and plain text has none (a list right under a sentence, a sentence right after a list), one is
added. And `|z|` in prose is an absolute value, not a reST substitution: its bars are escaped; a
quoted name with a suffix (`Fraction`s) is closed as reST needs.

The docstrings also quote names and code alike in single backquotes: `verify_speculative_tokens`,
but also `<length>\\n<json>` and `!pip ...`. The default role `name-or-code` (conf.py sets it) makes
a dotted Python name a link where Sphinx knows it, and code otherwise (nitpicky is off, so an unknown
name is not a warning); anything else is code as written, since the cross-reference syntax would eat
it (`a <b>` means "a, linking to b"; `!x`, "x, no link"). A name Sphinx does not find as written
(`block.block_verify`, from the page of specdec.rules) links to the one documented object whose
full name ends with it, and to nothing if several do.

    >>> literal_blocks(["The rule:", "    P(n) = alpha^n", "ends |z| here."])
    ['The rule:', '', '.. code-block:: text', '', '    P(n) = alpha^n', '', 'ends \\\\|z\\\\| here.']
"""

import re

from docutils import nodes, utils
from sphinx.util.nodes import make_refnode

_MARKUP = re.compile(r"([-*+] |\d+[.)] |#\. |:[^:]+:|\.\. |>>>|\|)")
_ITEM = re.compile(r"([-*+]|\d+[.)]|#\.) +(?=\S)")


def _indent(line):
    return len(line) - len(line.lstrip())


def _prose(line):
    """A line of prose made safe for reST: each | outside `code` escaped (reST reads |name| as a
    substitution), and a `name` followed by a letter (`Fraction`s) closed with an escaped space
    (reST ends inline markup only before a space or punctuation)."""
    parts = line.split("`")
    if len(parts) % 2 == 0 or "``" in line:     # an unpaired or a double backquote: leave the code alone
        return line
    for k in range(0, len(parts), 2):           # the even parts are outside `code`
        parts[k] = parts[k].replace("|", "\\|")
        if k and parts[k][:1].isalnum():
            parts[k] = "\\ " + parts[k]
    return "`".join(parts)


def literal_blocks(lines, owner=None):
    """Return docstring `lines` with the indented plain-text runs made literal blocks. `owner`:
    what the text before `lines` was ("plain" for a list item's own text)."""
    out = []
    # What the last unindented line was: "plain" text, a list item (the width of its marker, where
    # its text starts), or other markup (a field, a directive, a doctest).
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            out.append(line)
            i += 1
            continue
        if _indent(line) == 0:
            markup, item = _MARKUP.match(line), _ITEM.match(line)
            if out and out[-1].strip() and ((markup and owner == "plain" and not line.startswith(".."))
                                            or (not markup and isinstance(owner, int))):
                out.append("")      # between a sentence and a list, either way round, reST needs a blank line
            owner = item.end() if item else "markup" if markup else "plain"
            plain_text = item or not markup or line.startswith(":")
            out.append(_prose(line) if plain_text else line)
            i += 1
            continue
        j = i
        while j < n and lines[j].strip() and _indent(lines[j]) > 0:
            j += 1
        run = lines[i:j]
        if owner == "plain" and not run[0].lstrip().startswith(">>>"):
            # "text", not Python: a formula such as "P(n) = alpha^n for n < gamma" is no code.
            out += ["", ".. code-block:: text", ""]
            out += run
            nxt = next((line for line in lines[j:] if line.strip()), "")
            if _indent(nxt) > 0:
                out += ["", ".."]       # an empty comment ends the block: the next run is its own
            out.append("")
        elif isinstance(owner, int):
            # The rest of a list item: its text, as a docstring of its own, under the item's sentence.
            body = literal_blocks([line[min(owner, _indent(line)):] for line in run], owner="plain")
            out += [" " * owner + line if line else line for line in body]
        else:
            out += run
        i = j
    return out


_NAME = re.compile(r"[A-Za-z_][\w.]*(\(\))?")


def name_or_code(name, rawtext, text, lineno, inliner, options=None, content=()):
    """The default role: `text` is a cross-reference (py:obj) if it is a dotted Python name, else code."""
    if _NAME.fullmatch(text):
        py_obj = inliner.document.settings.env.domains["py"].role("obj")
        return py_obj("py:obj", rawtext, text, lineno, inliner, options or {}, content)
    code = utils.unescape(text, restore_backslashes=True)
    return [nodes.literal(rawtext, code, classes=["code"])], []


def unique_name(app, env, node, contnode):
    """Resolve a Python name Sphinx did not find as written (`block.block_verify`, from the page of
    specdec.rules) to the one documented object whose full name ends with it; none if several do
    (`propose`: the protocol's method and the n-gram model's), so no link ever goes to a guess."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].removesuffix("()")
    objects = env.domains["py"].objects
    found = [name for name in objects if name == target or name.endswith("." + target)]
    if len(found) != 1:
        return None
    entry = objects[found[0]]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, found[0])


def _process_docstring(app, what, name, obj, options, lines):
    lines[:] = literal_blocks(lines)


def setup(app):
    # After napoleon (priority 500) has turned "Args:" sections into fields.
    app.connect("autodoc-process-docstring", _process_docstring, priority=600)
    app.add_role("name-or-code", name_or_code)
    app.connect("missing-reference", unique_name)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
