// MathJax's configuration, read before MathJax loads (offline_math.py sets it as mathjax_config_path).
// A display formula is centred on a wide screen. On a narrow one (the width at which specdec.css switches to its
// narrow layout) it starts at the left edge: a numbered formula wider than the screen scrolls sideways in its own
// box, and centred it would start far to the right, leaving the reader an empty box at scroll 0.
// It adds to the configuration MyST writes before it (which formulas MathJax typesets), never replaces it.
window.MathJax = window.MathJax || {};
if (window.matchMedia("(max-width: 767.98px)").matches) {
  window.MathJax.svg = {...window.MathJax.svg, displayAlign: "left", displayIndent: "0"};
}
