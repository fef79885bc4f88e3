"""Availability probe of the hip execution backends."""

from __future__ import annotations

import ctypes.util


def rocm_runtime_present() -> bool:
    """Whether the HIP runtime library (libamdhip64) can be found."""
    return ctypes.util.find_library("amdhip64") is not None


def always() -> bool:
    """The source-only spec's probe: generating AMDGPU assembly needs no ROCm."""
    return True
