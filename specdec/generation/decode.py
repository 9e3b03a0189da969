"""The decoding loop: plain autoregressive generation, and speculative generation around it.

One speculative step (Leviathan et al. 2023; target p, draft q, draft length gamma):
the draft proposes gamma tokens one by one, the target scores all gamma + 1
positions in ONE call (`probs_for_positions`), and a verification rule keeps a
prefix of the draft plus one token from the target (a correction, or a bonus if
all gamma were kept). So every target call emits between 1 and gamma + 1 tokens.

The rule is `verify=` (the rules themselves live in `rules.py` and `multidraft.py`):

    "token"    (default) accept x ~ q if u < min(1, p(x)/q(x)), else draw from normalize(max(0, p - q))
    "block"    block verification (Sun et al. 2024): never fewer tokens per call on average
    "tree"     `width` children per node, drawn from q without replacement, gamma levels deep
               (width + ... + width^gamma nodes); the target scores every node in ONE call
               (`probs_for_tree`) and each level is verified by recursive rejection
    "typical"  Medusa's typical acceptance (eps, delta), greedy corrections: NOT lossless
    "greedy"   temperature 0 only: accept while the draft is argmax p
    "typical_tree"  a draft tree (as "tree"), each root-to-leaf path judged by "typical" and the path that
               keeps the most drafts kept (Medusa's rule on its trees): NOT lossless

At temperature T > 0, p and q are BOTH tempered (vLLM #9834 tempered only one), and
"token", "block" and "tree" emit text distributed exactly as the target's own
sampling at T. At T = 0 every rule is greedy verification (with one-hot rows, the
lossless rules keep a draft iff it is argmax p; the bar of "typical" is then 0.09),
so the output is token for token the target's greedy decoding, drafted by argmax
q (or, for trees, the top `width` ids of q).

    >>> from specdec.models import load_pretrained
    >>> draft, target = load_pretrained()
    >>> prompt = target.encode("The ")
    >>> res = speculative_generate(draft, target, prompt, 20, gamma=4, verify="block")
    >>> res.tokens == autoregressive_generate(target, prompt, 20), len(res.tokens)
    (True, 20)

Where the drafts come from (lesson 13). A `Draft` proposes one token at a time. A draft
that proposes a whole step at once has `chain(ids, gamma, temperature, rng)` (a chain of at
most gamma ids and the rows they were drawn from: prompt lookup, which may find none, and
heads on the target's features) or `tree(ids, depth, width, temperature, rng)` (a tree of
its own shape, `trees.py`); the loop asks it for that instead. `gamma="auto"` chooses each
step's gamma from alpha and the costs measured so far in the generation (`adaptive.py`).

The models must have the interface written down in `interface.py` (`Draft`, `Target`;
checked at the door); `RowDraft` gives it to a model that can only return rows. The
rules run on NumPy rows through `numpy_rows.NumpyRows`.
"""

import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from .. import multidraft, rules
from .._checks import check_nonnegative, check_sequence, shown, to_float
from .adaptive import GammaChooser
from .interface import Target, check_draft_model, check_model
from .rows import NumpyRows, sample_index
from .trees import full_tree

RULES = ("token", "block", "tree", "typical", "greedy", "typical_tree")
TREE_RULES = ("tree", "typical_tree")


@dataclass
class SpeculativeResult:
    """What `speculative_generate` produced, and how."""

    tokens: list            # exactly max_new_tokens new ids
    from_draft: list        # per token: True = an accepted draft, False = the target's correction or bonus
    accepted: list          # per target call: drafts accepted
    drafted: list           # per target call: the most it could accept (gamma, fewer near the end; a tree's depth)
    target_calls: int
    draft_calls: int        # contexts the draft scored (a tree's level of k nodes counts k)
    scored: list = field(default_factory=list)   # per target call: positions scored (gamma + 1; tree nodes + 1)

    @property
    def alpha(self):
        """Measured acceptance rate: accepted / drafts actually tested (drafts after a rejection are not).

        For i.i.d. acceptance with probability alpha this is the maximum-likelihood estimate;
        for a tree, it is the chance that a level keeps one of its children.
        """
        tested = sum(a + (a < d) for a, d in zip(self.accepted, self.drafted))
        return sum(self.accepted) / tested if tested else float("nan")

    @property
    def tokens_per_call(self):
        """New tokens per target call (compare with theory.expected_tokens_per_step)."""
        return len(self.tokens) / self.target_calls if self.target_calls else float("nan")


def _check(prompt_ids, max_new_tokens, temperature, vocab_size, gamma=1):
    if gamma == "auto":
        gamma = 1
    for name, v, low in (("max_new_tokens", max_new_tokens, 0), ("gamma", gamma, 0)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            also = ' or "auto"' if name == "gamma" else ""
            raise TypeError(f"{name} must be an int{also}, got {type(v).__name__}")
        if v < low:
            raise ValueError(f"{name} is {v}, it must be >= {low}")
        to_float(v, name)  # an int too large for a float (10 ** 400) is a ValueError naming it, not a hang
    check_nonnegative(temperature, "temperature")
    ids = check_sequence(prompt_ids, "prompt_ids")   # a str is refused: encode text with target.encode first
    for i, t in enumerate(ids):
        if isinstance(t, bool) or not isinstance(t, numbers.Integral):
            raise TypeError(f"prompt_ids[{i}] is {t!r}, not a token id (an int in [0, {vocab_size}))")
        if not 0 <= t < vocab_size:
            raise ValueError(f"prompt_ids[{i}] is {shown(t)}, not a token id in [0, {vocab_size})")
    return [int(t) for t in ids]


def _check_rule(draft, target, verify, temperature, width, eps, delta, gamma):
    """(width, eps, delta) with defaults, after checking the rule, its options and the models."""
    if verify not in RULES:
        raise ValueError(f"verify is {verify!r}; choose one of {', '.join(map(repr, RULES))}")
    if verify == "greedy" and temperature != 0:
        raise ValueError(f"verify='greedy' decodes at temperature 0, got temperature {temperature}")
    if gamma == "auto" and verify in TREE_RULES:
        raise ValueError(f"gamma='auto' chooses a chain's length; verify={verify!r} drafts a tree: give its depth")
    for name, value, rules_of in (("width", width, TREE_RULES), ("eps", eps, ("typical", "typical_tree")),
                                  ("delta", delta, ("typical", "typical_tree"))):
        if value is not None and verify not in rules_of:
            raise ValueError(f"{name} is an option of verify={rules_of[0]!r}, not of verify={verify!r}")
    if width is not None:
        if isinstance(width, bool) or not isinstance(width, numbers.Integral):
            raise TypeError(f"width must be an int >= 1, got {type(width).__name__} {width!r}")
        if width < 1:
            raise ValueError(f"width must be an int >= 1, got {shown(width)}")
        to_float(width, "width")
    check_draft_model(draft, "tree" if verify in TREE_RULES else "chain")
    check_model(target, Target, "target")
    if draft.V != target.V:
        raise ValueError(f"the draft has {draft.V} ids but the target has {target.V}: they must share a vocabulary")
    # eps and delta as typical_verify checks them (a negative eps would accept every draft, silently)
    return (2 if width is None else int(width)), \
        (rules.TYPICAL_EPS if eps is None else check_nonnegative(eps, "eps")), \
        (rules.TYPICAL_DELTA if delta is None else check_nonnegative(delta, "delta"))


def _rng(rng):
    """A numpy Generator from a Generator (used as is), a seed NumPy accepts, or None; errors name rng."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or type(rng).__name__ == "bool_":
        raise TypeError(f"rng is {rng!r}: pass a numpy Generator, an int seed >= 0 or None, not a bool")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:   # NumPy's own message does not say which argument
        raise type(exc)(f"rng must be a numpy Generator, an int seed >= 0 or None, got "
                        f"{type(rng).__name__} {shown(rng)} ({exc})") from None


def autoregressive_generate(target, prompt_ids, max_new_tokens, temperature=0.0, rng=None):
    """max_new_tokens new ids from the target alone, one target call per token."""
    ids = _check(prompt_ids, max_new_tokens, temperature, target.V)
    rng = _rng(rng) if temperature > 0 else None
    start = len(ids)
    for _ in range(max_new_tokens):
        p = target.probs_for_positions(ids, len(ids), temperature or 1.0)[0]
        ids.append(sample_index(p, rng) if temperature > 0 else int(np.argmax(p)))
    return ids[start:]


def _tree_step(draft, target, ids, depth, width, temperature, rng, verify, eps, delta):
    """Draft a tree, score it in one target call, verify it: (kept ids, next id, nodes, draft contexts, depth)."""
    maker = getattr(draft, "tree", None)
    if maker is not None:                   # a draft with a shape of its own (trees.py)
        tokens, parents, q_rows, contexts = maker(ids, depth, width, temperature, rng)
    else:
        tokens, parents, q_rows, contexts = full_tree(draft, ids, depth, width, temperature, rng)
    p_rows = target.probs_for_tree(ids, parents, tokens, temperature or 1.0)   # [nodes + 1, V], ONE call
    if temperature == 0:
        path, y = multidraft.greedy_tree_rule(tokens, parents, p_rows.argmax(1).tolist())
    elif verify == "typical_tree":
        path, y = typical_tree_rule(tokens, parents, p_rows, eps, delta)
    else:
        path, y = multidraft.tree_rule(tokens, parents, q_rows, p_rows, rng, replace=False, rows=NumpyRows)
    return [tokens[i] for i in path], y, len(tokens), contexts, tree_depth(parents)


def tree_depth(parents):
    """The number of levels of a tree given by its parents (0 for no node)."""
    depth = []
    for parent in parents:
        depth.append(1 if parent < 0 else depth[parent] + 1)
    return max(depth, default=0)


def typical_tree_rule(tokens, parents, p_rows, eps=rules.TYPICAL_EPS, delta=rules.TYPICAL_DELTA):
    """Medusa's typical acceptance on a tree: (the kept nodes, root first; the next id). NOT lossless.

    Each root-to-leaf path is judged by `rules.typical_rule` (the chain rule, unchanged) against the rows of
    its own positions; the path that keeps the most drafts wins (ties: the earlier leaf, the likelier branch
    of a tree built likeliest first), and the next id is that rule's greedy correction or bonus.
    """
    children = multidraft.children_by_row(parents)
    best = ([], None)
    for leaf in (i for i in range(len(tokens)) if not children[i + 1]):
        path = [leaf]
        while parents[path[-1]] >= 0:
            path.append(parents[path[-1]])
        path.reverse()
        rows = [p_rows[0]] + [p_rows[i + 1] for i in path]
        n, y = rules.typical_rule([tokens[i] for i in path], rows, eps, delta, NumpyRows)
        if best[1] is None or n > len(best[0]):
            best = (path[:n], y)
    if best[1] is None:                      # no node: the target's own greedy token
        return [], int(np.argmax(p_rows[0]))
    return best


def _chain(draft, ids, g, temperature, rng):
    """A chain of at most g drafts after ids and the rows they were drawn from (None at T = 0, for a greedy draft)."""
    maker = getattr(draft, "chain", None)
    if maker is not None:                   # a draft that proposes a step at once (prompt lookup, heads)
        tokens, q_rows = maker(ids, g, temperature, rng)
        return list(tokens), q_rows
    tokens, q_rows = [], []
    context = list(ids)
    if temperature == 0:  # greedy drafting needs only ids (the per-step Python work is a visible share of a step)
        for _ in range(g):
            context.append(draft.argmax_next(context))
        return context[len(ids):], None
    for _ in range(g):
        x, q = draft.propose(context, temperature, rng)
        context.append(x)
        q_rows.append(q)
    return context[len(ids):], q_rows


def speculative_generate(draft, target, prompt_ids, max_new_tokens, gamma, temperature=0.0, rng=None, *,
                         verify="token", width=None, eps=None, delta=None):
    """max_new_tokens new ids, drafted by q in runs of gamma and verified by p; a SpeculativeResult.

    verify: "token", "block", "tree" (width children per node, default 2), "typical"
    (eps, delta: Medusa's 0.09, 0.3 by default), "greedy" (temperature 0) or "typical_tree".
    gamma: the draft length (a tree's depth), or "auto" for a chain (`adaptive.GammaChooser`).
    rng: a numpy Generator or a seed; the same seed gives the same output (with gamma="auto" at T > 0,
    only with the same gammas: they follow the clock).
    """
    ids = _check(prompt_ids, max_new_tokens, temperature, target.V, gamma)
    width, eps, delta = _check_rule(draft, target, verify, temperature, width, eps, delta, gamma)
    greedy = temperature == 0
    rng = None if greedy else _rng(rng)
    t = temperature or 1.0
    start = len(ids)
    res = SpeculativeResult([], [], [], [], 0, 0)
    chooser = GammaChooser() if gamma == "auto" else None
    clock = time.process_time
    while len(ids) - start < max_new_tokens:
        # never draft past the end: this step may emit up to g + 1 tokens
        left = max_new_tokens - (len(ids) - start) - 1
        g = chooser.next_gamma(left) if chooser else min(gamma, left)
        if verify in TREE_RULES:
            kept, extra, nodes, rows, g = _tree_step(draft, target, ids, g, width, temperature, rng, verify, eps,
                                                     delta)
            ids += kept
            res.draft_calls += rows
            res.scored.append(nodes + 1)
        else:
            base = len(ids)
            t0 = clock()
            drafted, q_rows = _chain(draft, ids, g, temperature, rng)
            t1 = clock()
            g = len(drafted)                      # a chain draft may propose fewer (prompt lookup: none found)
            ids += drafted
            p_rows = target.probs_for_positions(ids, base, t)          # [g + 1, V], one target call
            t2 = clock()
            if greedy:
                n, extra = rules.greedy_rule(drafted, p_rows.argmax(1).tolist())
            elif verify == "token":
                n, extra = rules.token_rule(drafted, q_rows, p_rows, rng, NumpyRows)
            elif verify == "block":
                n, extra = rules.block_rule(drafted, q_rows, p_rows, rng, NumpyRows)
            else:
                n, extra = rules.typical_rule(drafted, p_rows, eps, delta, NumpyRows)
            del ids[base + n:]
            kept = drafted[:n]
            if chooser:
                chooser.record(g, g + 1, t2 - t1, t1 - t0, n, n + (n < g))
            res.draft_calls += g
            res.scored.append(g + 1)
        ids.append(extra)
        res.target_calls += 1
        res.accepted.append(len(kept))
        res.drafted.append(g)
        res.from_draft += [True] * len(kept) + [False]
    res.tokens = ids[start:]
    return res
