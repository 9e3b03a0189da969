"""Hostile: fails to load, and reports why with texts that are not strings (a list, an object).

Graded as a file that cannot be loaded, with the grader's own sentence: never a crash of the grader.
"""
import sys

worker = sys.modules["__main__"]
worker.describe_exception = lambda exc, display: {"type": ["not", "a", "string"], "message": {"x": 1}}
raise RuntimeError("at import")
