"""Broken: raises at import (cannot be graded: exit 2)."""

raise RuntimeError("boom at import")
