"""The model interface: what speculative generation asks of a draft q and a target p, written down once.

`Draft` and `Target` are `typing.Protocol`s: any object with these attributes fits,
with no base class to inherit. The shipped models have them (`models.TopKDraft`
and `models.NGramModel` are Drafts, `models.TransformerModel` and `models.MLPModel`
Targets); `decode.speculative_generate` checks both
at its door and calls nothing else. The fast paths are part of the interface
(`propose` returns the row it drew from; `argmax_next` needs no row at all); a
model that can only return rows becomes a Draft through `RowDraft`, the slower
generic path with the same results.

    >>> from specdec.models import load_pretrained
    >>> draft, target = load_pretrained()
    >>> isinstance(draft, Draft), isinstance(target, Target), isinstance(RowDraft(target), Draft)
    (True, True, True)
"""

from typing import Protocol, runtime_checkable

import numpy as np

from .rows import sample_index


@runtime_checkable
class Draft(Protocol):
    """What speculative generation asks of a draft q."""

    V: int   # vocabulary size, the target's too

    def propose(self, context, temperature, rng):
        """One draft step: (an id drawn from q(. | context) tempered by T > 0 with uniforms of rng, that row).

        The row is the distribution the id was drawn from: a [V] array, or an object NumPy reads as one
        (`np.asarray`) whose `row[x]` is q(x), such as `models.topk.SparseRow`. T = 0: the argmax, and the row.
        """

    def argmax_next(self, context):
        """The greedy draft step: argmax q(. | context), ties to the lowest id (no row needed)."""

    def next_token_probs(self, contexts, temperature):
        """[B, V] rows q(. | context) at temperature T > 0, one per context (a tree's level in one call)."""


@runtime_checkable
class Target(Protocol):
    """What speculative generation asks of a target p."""

    V: int

    def probs_for_positions(self, ids, start, temperature):
        """[len(ids) - start + 1, V]: p(. | ids[:t]) for t = start..len(ids), in one call (a chain's rows)."""

    def probs_for_tree(self, ids, parents, tokens, temperature):
        """[len(tokens) + 1, V]: p(. | ids), then p(. | ids + the path to node i), in one call (verify="tree")."""


class RowDraft:
    """Any model with V and next_token_probs(contexts, T) as a Draft (one row per step; no caches)."""

    def __init__(self, model):
        self.model, self.V = model, model.V

    def next_token_probs(self, contexts, temperature=1.0):
        return self.model.next_token_probs(contexts, temperature)

    def argmax_next(self, context):
        return int(np.argmax(self.model.next_token_probs([context], 1.0)[0]))

    def propose(self, context, temperature, rng):
        q = self.model.next_token_probs([context], temperature or 1.0)[0]
        return (int(np.argmax(q)) if temperature == 0 else sample_index(q, rng)), q


MEMBERS = {Draft: ("V", "propose", "argmax_next", "next_token_probs"),
           Target: ("V", "probs_for_positions", "probs_for_tree")}
# A draft that proposes a whole step at once (lesson 13) has one of these instead of Draft's per-token members:
#   chain(ids, gamma, temperature, rng) -> (at most gamma ids, the rows they were drawn from; None at T = 0)
#   tree(ids, depth, width, temperature, rng) -> (tokens, parents, q_rows, draft contexts scored), `trees.py`
STEP_MEMBERS = ("chain", "tree")


def check_model(model, protocol, name):
    """Raise a TypeError naming what `model` (the argument `name`) lacks of `protocol`."""
    if not isinstance(model, protocol):
        missing = [m for m in MEMBERS[protocol] if not hasattr(model, m)]
        hint = "; wrap a model that only has V and next_token_probs in RowDraft" if protocol is Draft else ""
        raise TypeError(f"{name} lacks {', '.join(missing)} of the {protocol.__name__} interface "
                        f"(specdec.generation.interface.{protocol.__name__}: {', '.join(MEMBERS[protocol])}){hint}")


def check_draft_model(draft, kind):
    """Raise a TypeError naming what `draft` lacks: a Draft, or (kind "chain" or "tree") a draft with that step.
    (`specdec._checks.check_draft` checks a draft's tokens and rows, not its model.)"""
    if kind in STEP_MEMBERS and callable(getattr(draft, kind, None)) and hasattr(draft, "V"):
        return
    check_model(draft, Draft, "draft")
