"""Availability probe of the webgpu execution backend ``source``."""

from __future__ import annotations


def always() -> bool:
    """Generating WGSL needs nothing, so the source-only spec is always available."""
    return True
