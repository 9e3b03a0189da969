// What a reader meets on one page of the course site, measured in the browser (tests/test_site_browser.py).
// Called as audit({width, theme}) after MathJax has typeset the page; returns a list of problems, each
// [kind, text], and a few numbers. Kinds: "cut" (an element past the edge of the box that holds it, where
// scrolling cannot reach it), "cue" (a box that scrolls sideways and does not say so), "page" (the page itself
// scrolls sideways), "math" (TeX left raw, a MathJax error), "contrast" (text of an output under 4.5:1),
// "figure" (an image without alt text, caption or a readable size, or a caption not aligned with it), "prose"
// (lines longer than 90 characters), "toc" (no on-page contents list on a wide screen), "answer" (an answer
// shown before it is asked for), "copy" (a code cell without its copy button).
async ({width, theme, book}) => {
  const problems = [];
  // The page a problem is on: on the one-page site (Sphinx's singlehtml: each document is a <span
  // id="document-NAME"> followed by its <section>), the innermost such section around the element.
  const pageOf = el => {
    for (let a = el; a; a = a.parentElement)
      if (a.tagName === "SECTION" && a.previousElementSibling?.id?.startsWith("document-"))
        return a.previousElementSibling.id.slice("document-".length);
    return document.querySelector('span[id^="document-"]') ? "index" : "";
  };
  let current = document.body;
  const say = (kind, text, el) => problems.push([kind, text, pageOf(el || current)]);
  const hint = el => ((el.closest("mjx-container") || el).textContent || el.getAttribute("alt") || "")
    .replace(/\s+/g, " ").trim().slice(0, 60);
  const article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
  const style = el => getComputedStyle(el);
  const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);

  // ---- Nothing past its box ---------------------------------------------------------------------------------
  // For each element a reader must see whole, walk up its ancestors: one that clips (overflow hidden or clip)
  // must hold it on both sides; one that scrolls must hold its left edge (a scroll box never reaches what lies
  // left of its start) and, when the element goes past its right edge, show the cue (class scroll-cue, set by
  // docs/_static/specdec.js). Above a scroll box the box itself is what must fit.
  const kinds = [["formula", "mjx-container[display='true'] > svg"], ["formula", "mjx-container:not([display]) > svg"],
                 ["code", "pre"], ["output", "div.cell_output > *"], ["table", "table"], ["figure", "img"],
                 ["signature", "dt.sig"], ["box", "div.theorem, div.proof, div.exercise, details.solution, div.caption"]];
  const seen = new Set();
  for (const [kind, selector] of kinds) {
    for (const el of article.querySelectorAll(selector)) {
      current = el;
      if (!visible(el) || el.closest("details:not([open]), .toggle-hidden")) continue;
      let box = el, r = el.getBoundingClientRect();
      for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement) {
        const o = style(a).overflowX;
        if (o === "visible") continue;
        const ar = a.getBoundingClientRect(), left = ar.left + a.clientLeft - a.scrollLeft, right = left + a.clientWidth + a.scrollLeft;
        const key = kind + hint(el);
        if (r.left < left - 1 && !seen.has(key + "L")) {
          seen.add(key + "L");
          say("cut", `${kind} cut on the left by ${Math.round(left - r.left)} px: ${JSON.stringify(hint(el))}`);
        }
        if (r.right > right + (el.closest("mjx-container:not([display])") ? 2 : 1)) {   // (an inline formula rounds)
          if (o === "hidden" || o === "clip") {
            if (!seen.has(key + "R")) {
              seen.add(key + "R");
              say("cut", `${kind} cut on the right by ${Math.round(r.right - right)} px: ${JSON.stringify(hint(el))}`);
            }
          } else if (!a.classList.contains("scroll-cue") && a !== article && a.tagName !== "BODY" && !seen.has(key + "C")) {
            seen.add(key + "C");
            say("cue", `${kind} scrolls sideways with no cue (${Math.round(r.width)} px in ${a.clientWidth}): ${JSON.stringify(hint(el))}`);
          }
        }
        if (o === "auto" || o === "scroll") { box = a; r = ar; }
      }
      if (box === el && r.right > document.documentElement.clientWidth + 1 && !seen.has(kind + hint(el) + "P")) {
        seen.add(kind + hint(el) + "P");
        say("page", `${kind} wider than the window (${Math.round(r.right)} px in ${document.documentElement.clientWidth}): ${JSON.stringify(hint(el))}`);
      }
    }
  }
  const page = [document.scrollingElement.scrollWidth, window.innerWidth];
  if (!book && page[0] > page[1] + 1) say("page", `the page scrolls sideways: ${page[0]} px wide in a ${page[1]} px window`, article);

  // ---- Formulas typeset --------------------------------------------------------------------------------------
  const text = article.innerText;
  for (const d of ["$$", "\\(", "\\[", "\\begin{"]) {
    if (!text.includes(d)) continue;
    const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode())
      if (n.textContent.includes(d) && visible(n.parentElement) && !n.parentElement.closest("pre, code, script, mjx-container"))
        { say("math", `raw TeX left on the page: ${d} in ${JSON.stringify(n.textContent.trim().slice(0, 50))}`, n.parentElement); break; }
  }
  // A TeX command MathJax did not run is drawn as its text: in a formula's text mode (a \\tag, a \\text{}) it is no
  // error, only letters; the assistive MathML beside every drawn formula holds them.
  for (const e of article.querySelectorAll("mjx-container mtext")) {
    const raw = e.textContent.match(/\\[A-Za-z]+/);
    if (raw) { say("math", `raw TeX in a formula: ${raw[0]} in ${JSON.stringify(e.textContent.slice(0, 50))}`, e.closest("mjx-container")); break; }
  }
  for (const e of article.querySelectorAll("[data-mjx-error], mjx-merror"))
    say("math", `MathJax error: ${(e.getAttribute("data-mjx-error") || e.textContent).slice(0, 60)}`, e);
  const typeset = article.querySelectorAll("mjx-container").length;

  // ---- Contrast of text (WCAG 2.1: 4.5:1): every text of the article, outputs (the grader's report) included --
  const rgba = c => { const m = c.match(/[\d.]+/g) || [0, 0, 0, 0]; return [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1]; };
  const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
                                      .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const behind = new Map();
  const background = el => {     // the colour behind el: its ancestors' backgrounds, composed, down to the page's
    if (!el) return [255, 255, 255, 1];
    if (!behind.has(el)) {
      const c = rgba(style(el).backgroundColor);
      behind.set(el, c[3] >= 1 ? c : over(c, background(el.parentElement)));
    }
    return behind.get(el);
  };
  let worst = null;
  {
    const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    const done = new Set();
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.textContent.trim() || done.has(el)) continue;
      done.add(el);
      // (a heading's "#" link shows only under the pointer, as a hint: not text to read)
      if (el.closest("mjx-container, svg, script, style, a.headerlink, details:not([open]) > :not(summary)")
          || !visible(el)) continue;
      const bg = background(el), fg = over(rgba(style(el).color), bg);
      const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
      const ratio = (hi + 0.05) / (lo + 0.05);
      const where = el.closest("div.cell_output, div.output") ? "output" : "text";
      if (where === "output" && (!worst || ratio < worst[0])) worst = [ratio, hint(el)];
      if (ratio < 4.5) say("contrast", `${where} at ${ratio.toFixed(2)}:1 in ${theme} mode: ${JSON.stringify(hint(el))}`, el);
    }
  }

  // ---- Figures: alt text, caption, aligned, readable, a light card in dark mode ------------------------------
  const figures = [];
  for (const img of article.querySelectorAll("img:not(.toggler)")) {     // (the module index's +/- icons: no figures)
    const alt = (img.getAttribute("alt") || "").trim();
    const name = JSON.stringify(alt.slice(0, 50) || img.getAttribute("src"));
    if (!alt || /\.(png|svg|jpe?g|gif)$/i.test(alt) || alt.includes("_images/"))
      say("figure", `figure with no alt text but its file name: ${name}`, img);
    // Its caption: a figcaption, or the <div class="caption"> of the next cell (docs/README.md, "writing a lesson").
    const cell = img.closest("div.cell, figure, p, div.specdec-hero") || img;
    let caption = img.closest("figure")?.querySelector("figcaption");
    for (let next = cell.nextElementSibling; !caption && next; next = next.nextElementSibling) {
      if (next.matches("div.caption")) caption = next;
      else if (next.matches("div.cell, section, h1, h2, h3, p, ul, ol, div.math")) break;
      else if (next.querySelector("div.caption")) { caption = next.querySelector("div.caption"); break; }
    }
    if (!caption) { say("figure", `figure with no caption: ${name}`, img); }
    else {
      const ir = img.getBoundingClientRect(), cr = caption.getBoundingClientRect();
      if (style(caption).textAlign === "center" || Math.abs(cr.left - ir.left) > 24)
        say("figure", `caption not aligned with its figure (${Math.round(cr.left - ir.left)} px): ${name}`, img);
    }
    // Readable: shown at no less than 75% of the size it was drawn at (its width attribute: the figure's own
    // width at Jupyter's resolution), where its smallest text, 8 pt, stays above 8 px.
    const drawn = +img.getAttribute("width") || 0;
    if (drawn && img.clientWidth < 0.75 * Math.min(drawn, img.naturalWidth || drawn) - 1)
      say("figure", `figure shown at ${Math.round(100 * img.clientWidth / drawn)}% of its size: ${name}`, img);
    if (theme === "dark") {
      const bg = background(img), filter = style(img).filter;
      if (lum(bg) < 0.8) say("figure", `figure on a dark background in dark mode: ${name}`, img);
      if (filter && filter !== "none") say("figure", `figure dimmed in dark mode (${filter}): ${name}`, img);
    }
    figures.push(alt.slice(0, 40));
  }

  // ---- Prose at a reading length, and the page's contents beside it ---------------------------------------------
  let longest = 0, longestAt = null;
  const canvas = document.createElement("canvas").getContext("2d");
  const sample = "the target p scores every drafted token in one call and keeps the first ones it accepts";
  for (const p of article.querySelectorAll("section > p, section > ul > li, section > ol > li")) {
    if (!visible(p) || p.textContent.length < 200) continue;
    canvas.font = `${style(p).fontWeight} ${style(p).fontSize} ${style(p).fontFamily}`;
    const chars = p.clientWidth / (canvas.measureText(sample).width / sample.length);
    if (chars > longest) { longest = chars; longestAt = p; }
  }
  if (width >= 1200 && longest > 90)
    say("prose", `prose lines of about ${Math.round(longest)} characters (comfortable: 60 to 90)`, longestAt);
  const headings = article.querySelectorAll("section section > h2, section section > h3").length;
  const toc = document.querySelector("#pst-secondary-sidebar, .bd-sidebar-secondary");
  if (!book && width >= 1200 && headings >= 2 && !(toc && visible(toc) && toc.getBoundingClientRect().width > 100))
    say("toc", `no on-page contents list at ${width} px`, article);

  // ---- Answers hidden, code copyable -------------------------------------------------------------------------
  for (const d of article.querySelectorAll("details.solution[open], div.cell_output details[open]"))
    say("answer", `an answer is open when the page loads: ${JSON.stringify(hint(d))}`, d);
  for (const c of article.querySelectorAll("div.cell div.cell_input div.highlight"))
    if (!c.querySelector("button.copybtn")) say("copy", "a code cell without its copy button", c);

  return {problems, typeset, figures, page, longest: Math.round(longest), worst: worst && [+worst[0].toFixed(2), worst[1]]};
}
