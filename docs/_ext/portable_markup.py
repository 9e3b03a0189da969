r"""Sphinx extension: the notebooks' portable markup, shown on the site as it is in JupyterLab.

The notebooks use markup that JupyterLab renders as it is (docs/README.md, "Markup for the
notebooks"): HTML boxes (<div class="theorem">, <details class="solution">, <div class="caption">),
which MyST passes through and docs/_static/specdec.css draws, and numbered equations written
`$$ ... \tag{3.1} $$`. Those need one fix here: Sphinx wraps a display formula of several lines
(`\\`) in a `split` environment, where MathJax forbids \tag ("\tag not allowed in split
environment"). So such a formula's tag is moved after the split, where it numbers the whole formula.

    >>> print(tagged(r"a &= b \\ &= c \tag{3.1}"))
    \[\begin{split}a &= b \\ &= c \end{split}\tag{3.1}\]
    >>> print(tagged(r"a = b \tag{1}"))     # one line: Sphinx adds no split, nothing to fix
    None
"""

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

_TAG = re.compile(r"\\tag\*?\{[^{}]*\}")


def tagged(tex):
    """The display formula `tex` as MathJax should get it when it has a tag and several lines, else None."""
    tags = _TAG.findall(tex)
    if len(tags) != 1 or "\\\\" not in tex or "\n\n" in tex.strip():
        return None
    body = _TAG.sub("", tex).strip()
    return f"\\[\\begin{{split}}{body} \\end{{split}}{tags[0]}\\]"


class TaggedMath(SphinxPostTransform):
    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs):
        for node in self.document.findall(nodes.math_block):
            tex = tagged(node.astext())
            if tex is not None and not node.get("nowrap"):
                node.children = [nodes.Text(tex)]
                node["nowrap"] = True       # written as is: the delimiters are in the text


def setup(app):
    app.add_post_transform(TaggedMath)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
