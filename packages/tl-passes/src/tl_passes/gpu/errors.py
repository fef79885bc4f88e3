"""The error the GPU lowering raises for what it cannot (yet) lower."""

from __future__ import annotations


class GpuLoweringError(NotImplementedError):
    """A tile program uses something the GPU lowering does not support (yet), or
    something the target's `GpuTraits` does not offer (the message names the target)."""
