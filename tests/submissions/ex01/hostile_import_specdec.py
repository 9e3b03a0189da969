"""Hostile: calls the reference instead of writing it (the grader blocks import specdec)."""

from specdec import verify_speculative_tokens  # noqa: F401
