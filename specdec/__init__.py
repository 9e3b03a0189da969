"""specdec: the verification step of speculative decoding, taught, proved and graded.

Notation (Leviathan et al. 2023), the same in every module and notebook:
target p, draft q, draft length gamma (K in the graded problem), acceptance rate alpha.

Map of the package, in the order the course meets it. The rules, plain Python:
    logits      softmax: logits to a next-token distribution
    residual    normalize(max(0, p - q)) (the one residual of the library) and the argmax tie-break
    rules       the chain rules side by side: graded, token, block, greedy, typical
    verify      the graded rule `verify_speculative_tokens`
    sampling    the lossless sampler `speculative_sample`
    block       block verification `block_verify`, derived
    multidraft  many drafts for one position, and token trees
    typical     greedy and typical acceptance
    theory      the formulas: beta, E[tokens per call], the wall-time speedup, P(n accepted)
    lessons     the small helpers the lessons share: a row printed, a random row drawn
and the families, one subpackage each:
    exact       exact enumeration in Fractions: what each rule (and each known mistake of it) emits
    batched     the rule over a batch [B, K, V] with NumPy, from probabilities or logits
    generation  the rules on models' NumPy rows: interface, decoding, honest measurement, roofline
    models      a character n-gram draft and an MLP target trained on Python's docs (NumPy)
`python -m specdec generate` runs generation; `python -m specdec.grade` runs the grading engine, which
is a package of its own (`grader`, beside this one) and is no part of what the lessons import.

Importing `specdec` imports no NumPy: the graded path stays plain Python.
"""

from .residual import argmax, residual_distribution
from .sampling import speculative_sample
from .logits import softmax
from .verify import verify_speculative_tokens
from .block import block_verify
from .multidraft import multi_draft_sample, verify_tree
from .typical import greedy_verify, typical_verify

__all__ = ["argmax", "block_verify", "greedy_verify", "multi_draft_sample", "residual_distribution", "softmax",
           "speculative_sample", "typical_verify", "verify_speculative_tokens", "verify_tree"]
__version__ = "0.1.0"
