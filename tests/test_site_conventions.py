"""The notebooks follow the conventions of docs/README.md ("Writing a lesson"), read from their JSON (no build, no
browser): what must hold in JupyterLab and on GitHub as well as on the site.

- Answers stay folded after a re-run: a cell that prints the numbers of the solutions shows them in an HTML
  <details> output (closed), never as a stream that JupyterLab's Run All unfolds (JupyterLab expands an output
  collapsed by `jupyter.outputs_hidden` whenever its cell runs again, and the site's `hide-output` toggle does not
  exist in JupyterLab).
- Every figure (an image output) has alt text in its cell's metadata (`mystnb.image.alt`), which is not a file name,
  and the next cell is its caption: `<div class="caption" id="fig-NN-k">` holding `**Figure N.k.**`.
- Every proof box ends with one end mark, the author's `$\\blacksquare$` (or `$\\square$`), outside any display
  formula.

The notebooks listed in tests/test_site_browser.py's PENDING are being rewritten to these conventions: their test is
expected to fail (xfail; not strict: a check the notebook already meets passes, XPASS).
"""

import json
import re
from pathlib import Path

import pytest

from test_site_browser import PENDING

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb")) + sorted((REPO / "exercises").glob("*/*.ipynb"))
# A lesson's number is its file's (07_0_...: a lesson 7.0 between 06 and 07, with figures 7.0.k and ids fig-07-0-k).
CAPTION = re.compile(r'^<div class="caption" id="fig-(\d\d(?:-\d)?)-(\d+)">\n\n\*\*Figure (\d+(?:\.\d)?)\.(\d+)\.\*\* ')
END_MARK = re.compile(r"\$\\(blacksquare|square)\$")


def _notebooks():
    for nb in NOTEBOOKS:
        page = nb.relative_to(REPO).with_suffix(".html").as_posix()
        marks = [pytest.mark.xfail(strict=False, reason=PENDING[page])] if page in PENDING else []
        yield pytest.param(nb, marks=marks, id=nb.relative_to(REPO).as_posix())


def cells(nb):
    return json.loads(nb.read_text(encoding="utf-8"))["cells"]


def source(cell):
    return "".join(cell["source"])


@pytest.mark.parametrize("nb", _notebooks())
def test_answers_stay_folded_after_a_rerun(nb):
    wrong = []
    for k, cell in enumerate(cells(nb)):
        if cell["cell_type"] != "code":
            continue
        meta, text = cell.get("metadata", {}), source(cell)
        if "hide-output" in meta.get("tags", []) or meta.get("jupyter", {}).get("outputs_hidden"):
            wrong.append(f"cell {k}: folded by hide-output / outputs_hidden, which JupyterLab's Run All unfolds")
        if "Numbers for the solutions" in text:
            html = "".join("".join(o.get("data", {}).get("text/html", "")) for o in cell.get("outputs", []))
            streams = [o for o in cell.get("outputs", []) if o["output_type"] == "stream"]
            if streams or not re.match(r"<details class='answer'><summary>[^<]+</summary><pre>", html) \
                    or "<details open" in html:
                wrong.append(f"cell {k}: its answers are not a closed <details class='answer'> output")
    assert not wrong, f"{nb.name} (docs/README.md, 'Writing a lesson'):\n" + "\n".join(wrong)


@pytest.mark.parametrize("nb", _notebooks())
def test_every_figure_has_alt_text_and_a_caption(nb):
    wrong, seen = [], set()
    found = re.match(r"\d\d(?:_\d(?=_))?", nb.name)
    number = found.group(0).replace("_", "-") if found else nb.name[:2]
    all_cells = cells(nb)
    for k, cell in enumerate(all_cells):
        if not any(kind.startswith("image/") for o in cell.get("outputs", []) for kind in o.get("data", {})):
            continue
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "")
        if len(alt) < 40 or re.search(r"\.(png|svg|jpe?g)$", alt):
            wrong.append(f"cell {k}: no alt text that describes the figure (metadata mystnb.image.alt)")
        following = all_cells[k + 1] if k + 1 < len(all_cells) else {"cell_type": "code", "source": []}
        found = CAPTION.match(source(following)) if following["cell_type"] == "markdown" else None
        if not found:
            wrong.append(f"cell {k}: the next cell is not its caption (<div class=\"caption\" id=\"fig-NN-k\">)")
        elif found.group(1) != number or found.group(3) != number.lstrip("0").replace("-", ".") \
                or found.group(2) != found.group(4) \
                or found.group(1, 2) in seen:
            wrong.append(f"cell {k}: caption id fig-{found.group(1)}-{found.group(2)} does not match Figure "
                         f"{found.group(3)}.{found.group(4)} of lesson {number}, or repeats one")
        else:
            seen.add(found.group(1, 2))
    assert not wrong, f"{nb.name} (docs/README.md, 'Writing a lesson'):\n" + "\n".join(wrong)


@pytest.mark.parametrize("nb", _notebooks())
def test_every_proof_ends_with_one_end_mark_outside_its_formulas(nb):
    wrong = []
    for k, cell in enumerate(cells(nb)):
        text = source(cell) if cell["cell_type"] == "markdown" else ""
        for proof in re.findall(r'<div class="proof">\n(.*?)\n</div>', text, flags=re.S):
            marks = END_MARK.findall(proof)
            displays = re.findall(r"\$\$.*?\$\$", proof, flags=re.S)
            if len(marks) != 1:
                wrong.append(f"cell {k}: a proof with {len(marks)} end marks ($\\blacksquare$)")
            elif any("blacksquare" in d or "\\square" in d for d in displays):
                wrong.append(f"cell {k}: a proof's end mark inside a display formula")
            elif not END_MARK.search(proof.rstrip()[-20:]):
                wrong.append(f"cell {k}: a proof's end mark is not at its end")
    assert not wrong, f"{nb.name} (docs/README.md, 'Writing a lesson'):\n" + "\n".join(wrong)
