"""specdec: the verification step of speculative decoding, taught, proved and graded.

Notation (Leviathan et al. 2023), the same in every module and notebook:
target p, draft q, draft length gamma (K in the graded problem), acceptance rate alpha.

Map of the package, in the order the course meets it:
    logits      softmax: logits to a next-token distribution
    residual    normalize(max(0, p - q)) and the graded problem's argmax tie-break
    rules       the chain rules side by side: graded, token, block, greedy, typical (plain Python)
    verify      the graded rule `verify_speculative_tokens` (plain Python)
    sampling    the lossless sampler `speculative_sample` (plain Python)
    block       block verification `block_verify`, derived (plain Python)
    multidraft  many drafts for one position, and token trees (plain Python)
    typical     greedy and typical acceptance (plain Python)
    theory      exact enumeration and the speedup formulas; `exact` for multi-token rules (plain Python)
    batched     the rule over a batch [B, K, V] with NumPy, from probabilities or logits (imported on demand);
                batched_logits, batched_seeds (per-row streams), batched_naive (the baseline)
    models      a character n-gram draft and an MLP target trained on Python's docs (NumPy)
    interface   the Draft and Target protocols speculative generation asks of the models
    decode      plain and speculative generation, with any rule; `python -m specdec generate` (NumPy)
    measure     honest timing: fresh prompts, interleaved pairs, bootstrap intervals, cold c and r (NumPy)
    roofline    x @ W by weight size and rows, the machine's caches: where the speedup comes from (NumPy)
    grading     the autograder; `python -m specdec.grade` (plain Python)

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
