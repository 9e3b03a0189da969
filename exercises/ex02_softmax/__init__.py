"""Exercise 02: its statement, stub, notebook, solution and grading (see exercises/__init__.py)."""
