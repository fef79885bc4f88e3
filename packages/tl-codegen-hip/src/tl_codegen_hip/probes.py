"""Availability probe of the hip execution backend."""

from __future__ import annotations


def always() -> bool:
    """The source-only spec's probe: generating AMDGPU assembly needs no ROCm."""
    return True
