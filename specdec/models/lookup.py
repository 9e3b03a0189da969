"""Prompt lookup: the draft copies what followed the last earlier occurrence of the text's own ending.

What vLLM calls its n-gram speculator (`prompt_lookup_max`, `prompt_lookup_min`)
and Saxena's prompt lookup decoding: no model at all. Take the last n ids of
the text so far (the prompt and what was generated), for n from `max_n` down to
`min_n`; at the latest earlier place those n ids occur, propose the ids that
followed them there, up to gamma of them. Where nothing matches, it proposes
nothing and the step is a plain target call. It pays where the output repeats
its input (code edits, quotes, names, lists) and costs one search per step.

The draft is deterministic, so its row q is the point mass on the id it proposes,
at every temperature (a point mass tempered is itself). That is the q the verifier
must be given: the token rule then accepts x with probability min(1, p(x) / 1) =
p(x) and draws a rejection's replacement from p with x removed, renormalised, and
the text is exactly the target's sample (lesson 03 asks nothing of q but to be
the row the draft proposed from).

    >>> lookup = PromptLookupDraft(V=5, max_n=3)
    >>> lookup.chain([1, 2, 3, 4, 1, 2], gamma=3, temperature=0.0, rng=None)   # "1 2" was followed by "3 4 1"
    ([3, 4, 1], None)
    >>> tokens, rows = lookup.chain([1, 2, 3, 4, 1, 2], gamma=2, temperature=1.0, rng=None)
    >>> tokens, [row.tolist() for row in rows]
    ([3, 4], [[0.0, 0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0]])
    >>> lookup.chain([1, 2, 3], gamma=3, temperature=0.0, rng=None)           # "3" never occurred before
    ([], None)
"""

import numpy as np


class PromptLookupDraft:
    """A chain draft (`generation.interface`: `chain`) that proposes the continuation of the text's longest
    suffix of `min_n` to `max_n` ids seen earlier in it; ids must be below 256."""

    def __init__(self, V, max_n=8, min_n=2):
        if not 1 <= min_n <= max_n:
            raise ValueError(f"min_n = {min_n} and max_n = {max_n}: need 1 <= min_n <= max_n")
        if not 0 < V <= 256:
            raise ValueError(f"V is {V}: prompt lookup matches ids as bytes, so V must be in [1, 256]")
        self.V, self.max_n, self.min_n = int(V), int(max_n), int(min_n)
        self._eye = np.eye(self.V)

    def match(self, ids):
        """(start, n): the latest earlier occurrence ids[start:start + n] of the longest matching suffix, or None."""
        text = bytes(ids)
        for n in range(min(self.max_n, len(text) - 1), self.min_n - 1, -1):
            start = text.rfind(text[-n:], 0, len(text) - 1)     # ends before the last id: something follows it
            if start >= 0:
                return start, n
        return None

    def chain(self, ids, gamma, temperature, rng):
        """(at most gamma ids, their rows: point masses, None at T = 0): the continuation of the match, or none."""
        found = self.match(ids) if gamma > 0 else None
        if found is None:
            return [], None if temperature == 0 else []
        start, n = found
        tokens = list(ids[start + n:start + n + gamma])
        return tokens, None if temperature == 0 else [self._eye[x] for x in tokens]
