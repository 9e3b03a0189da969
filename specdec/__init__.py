"""specdec: the verification step of speculative decoding, taught, proved and graded.

Notation (Leviathan et al. 2023), the same in every module and notebook:
target p, draft q, draft length gamma (K in the graded problem), acceptance rate alpha.

Map of the package, in the order the course meets it:
    logits      softmax: logits to a next-token distribution
    residual    normalize(max(0, p - q)) and the seed's argmax tie-break
    verify      the graded rule `verify_speculative_tokens` (plain Python)
    sampling    the lossless sampler `speculative_sample` (plain Python)
    theory      exact enumeration and the speedup formulas (plain Python)
    batched     the rule over a batch with NumPy (imported on demand)
    models      a character n-gram draft and an MLP target trained on Python's docs (NumPy)
    decode      plain and speculative generation; `python -m specdec generate` (NumPy)
    grading     the autograder; `python -m specdec.grade` (plain Python)

Importing `specdec` imports no NumPy: the graded path stays plain Python.
"""

from .residual import argmax, residual_distribution
from .sampling import speculative_sample
from .logits import softmax
from .verify import verify_speculative_tokens

__all__ = ["argmax", "residual_distribution", "softmax", "speculative_sample", "verify_speculative_tokens"]
__version__ = "0.1.0"
