// The search page, from file:// as well as over http (docs/_ext/search_offline.py).
//
// 1. Excerpts offline: Sphinx's search fetches every page it found to cut an excerpt from it; a file:// page may
//    not fetch another file. There, the fetch of a page of the site is answered from window.SPECDEC_TEXTS (the
//    text of every page, written by the build), and Search.htmlToText reads that text as it is.
// 2. A typo forgiven: a word that neither the index nor a part of an indexed word holds is replaced by the indexed
//    word closest to it (at most one edit per four letters, compared with the word's beginning: the index holds
//    stems such as "accept"), and the results say which word was searched instead.
(() => {
  const MARK = "<!--specdec-text-->";
  if (location.protocol === "file:" && window.SPECDEC_TEXTS) {
    const fetchPage = window.fetch.bind(window);
    window.fetch = (url, ...rest) => {
      const root = new URL(document.documentElement.dataset.content_root || "./", location.href).href;
      const page = new URL(url, location.href).href;
      const name = page.startsWith(root) ? decodeURI(page.slice(root.length)).replace(/\.html$/, "") : null;
      if (name !== null && Object.prototype.hasOwnProperty.call(window.SPECDEC_TEXTS, name))
        return Promise.resolve(new Response(MARK + window.SPECDEC_TEXTS[name]));
      return fetchPage(url, ...rest);
    };
  }

  // Levenshtein distance between `word`'s beginning (any length within 2 of the term's) and `term`.
  const prefixDistance = (word, term) => {
    let best = Infinity;
    const row = Array.from({length: term.length + 1}, (_, j) => j);
    for (let i = 1; i <= word.length; i++) {
      let diagonal = row[0];
      row[0] = i;
      for (let j = 1; j <= term.length; j++) {
        const up = row[j];
        row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (word[i - 1] === term[j - 1] ? 0 : 1));
        diagonal = up;
      }
      if (Math.abs(i - term.length) <= 2) best = Math.min(best, row[term.length]);
    }
    return best;
  };

  document.addEventListener("DOMContentLoaded", () => {
    if (typeof Search === "undefined") return;   // searchtools.js declares it (a global const, not on window)
    const toText = Search.htmlToText;
    Search.htmlToText = (text, anchor) => text.startsWith(MARK) ? text.slice(MARK.length) : toText(text, anchor);

    const parse = Search._parseQuery;
    let replaced = [];
    Search._parseQuery = (query) => {
      const parsed = parse(query);
      const [, searchTerms, , highlightTerms] = parsed;
      const index = Search._index;
      if (!index) return parsed;
      const known = (w) => w in index.terms || w in index.titleterms
        || Object.keys(index.terms).some((t) => t.includes(w));
      replaced = [];
      for (const word of [...searchTerms]) {
        if (word.length < 5 || known(word)) continue;
        const typed = [...highlightTerms].find((t) => new Stemmer().stemWord(t) === word) || word;
        let best = null, score = -Infinity;
        for (const term of Object.keys(index.terms)) {
          if (term.length < 4 || Math.abs(term.length - typed.length) > typed.length / 2) continue;
          const d = prefixDistance(typed, term);
          if (d <= Math.floor(typed.length / 4) && term.length - 2 * d > score) { best = term; score = term.length - 2 * d; }
        }
        if (best) {
          searchTerms.delete(word);
          searchTerms.add(best);
          highlightTerms.add(best);
          replaced.push([typed, best]);
        }
      }
      return parsed;
    };
    const query = Search.query;
    Search.query = (q) => {
      query(q);
      if (!replaced.length) return;
      const note = document.createElement("p");
      note.className = "specdec-typo";
      note.textContent = "No page has " + replaced.map(([typed, term]) => `“${typed}”: results for “${term}”`).join("; ") + ".";
      const out = document.getElementById("search-results");
      out?.prepend(note);
    };
  });
})();
