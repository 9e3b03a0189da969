// The course site's script (docs/README.md, "Layout").
//
// 1. A box that scrolls sideways says so. Every box of SCROLL_BOXES (a display formula's MathJax container, a
//    code block's pre, a table's container, an output, a figure's output) whose content is wider than the box
//    gets the class scroll-cue, which specdec.css draws as edge shadows and the words "scroll →". A
//    ResizeObserver re-checks a box whenever its size changes (MathJax typesetting it, a resized window).
// 2. A figure knows the width it was drawn at (its width attribute), so that specdec.css keeps it readable on a
//    narrow screen (--drawn).
// 3. Toggles have names a screen reader can say: the sidebar's unlabelled <summary> (which opens a section of
//    the navigation) gets the section's name; MyST-NB's "Show code cell source" toggle is named by its own
//    words, not by an aria-label that says something else ("Toggle hidden content").
const SCROLL_BOXES = [
  "div.math > mjx-container", "mjx-container:not([display])", "pre", ".pst-scrollable-table-container",
  "div.cell_output > .output.text_html", "div.cell_output:has(img)", "div.theorem", "div.lemma", "div.definition",
  "div.proof", "div.example", "div.remark", "div.exercise", "table.indextable",
].map((box) => ".bd-article " + box).join(", ");

function markScrollBoxes() {
  // A box that scrolls can be scrolled from the keyboard too: it takes the focus (tabindex), as WCAG asks.
  const mark = (box) => {
    const scrolls = box.scrollWidth > box.clientWidth + (box.matches("mjx-container:not([display])") ? 2 : 1);
    box.classList.toggle("scroll-cue", scrolls);
    if (scrolls && !box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
  };
  const observer = new ResizeObserver((entries) => entries.forEach((entry) => mark(entry.target)));
  const seen = new WeakSet();
  const scan = () => document.querySelectorAll(SCROLL_BOXES).forEach((box) => {
    if (!seen.has(box)) { seen.add(box); observer.observe(box); }
    mark(box);
  });
  scan();
  // MathJax adds its containers after the page has loaded: look again once it has typeset the page.
  window.addEventListener("load", () => window.MathJax?.startup?.promise?.then(scan));
  window.addEventListener("resize", () => requestAnimationFrame(scan));
}

function drawnWidths() {
  document.querySelectorAll(".bd-article div.cell_output img[width]").forEach((img) =>
    img.style.setProperty("--drawn", `${img.getAttribute("width")}px`));
}

function nameToggles() {
  document.querySelectorAll(".bd-sidebar-primary li.has-children > details > summary").forEach((summary) => {
    const link = summary.parentElement.parentElement.querySelector(":scope > a, :scope > p.caption");
    if (!summary.textContent.trim() && !summary.getAttribute("aria-label"))
      summary.setAttribute("aria-label", `The pages under ${(link?.textContent || "this entry").trim()}`);
  });
  document.querySelectorAll('.bd-article summary[aria-label="Toggle hidden content"]').forEach((summary) =>
    summary.removeAttribute("aria-label"));
  // The sidebar's search button: its name is its words (the theme labels it "Search" and shows "Search Ctrl+K").
  document.querySelectorAll("button.search-button-field[aria-label]").forEach((button) => button.removeAttribute("aria-label"));
}

document.addEventListener("DOMContentLoaded", () => {
  drawnWidths();
  markScrollBoxes();
  nameToggles();
});
