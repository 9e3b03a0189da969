"""Removes the grader's import hook, then imports the reference: still cannot be graded."""
import sys

sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_Guard"]
from specdec.verify import verify_speculative_tokens  # noqa: E402,F401
