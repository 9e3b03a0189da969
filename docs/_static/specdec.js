// The course site's script (docs/README.md, "Layout"): a box that scrolls sideways says so. A display
// formula's scroll box (MathJax's mjx-container, inside div.math) or a code block (div.highlight) whose content
// is wider than the box gets the class scroll-cue, which specdec.css draws as edge shadows and a "scroll" tag.
// A ResizeObserver re-checks whenever a block's size changes: when MathJax has typeset it, when the window
// is resized.
document.addEventListener("DOMContentLoaded", () => {
  const mark = (box) => box.classList.toggle("scroll-cue", box.scrollWidth > box.clientWidth + 1);
  const check = (block) => [block, ...block.querySelectorAll("mjx-container[display='true']")].forEach(mark);
  const observer = new ResizeObserver((entries) => entries.forEach((entry) => check(entry.target)));
  document.querySelectorAll(".bd-article div.math, .bd-article div.highlight").forEach((box) => observer.observe(box));
});
