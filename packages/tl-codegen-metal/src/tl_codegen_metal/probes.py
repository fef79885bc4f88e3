"""Availability probe of the metal execution backend ``source``."""

from __future__ import annotations


def always() -> bool:
    """The source-only spec's probe: generating MSL needs nothing."""
    return True
