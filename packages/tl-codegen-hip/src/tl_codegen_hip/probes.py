"""Availability probe of the hip execution backends."""

from __future__ import annotations

import ctypes.util


def rocm_runtime_present() -> bool:
    """Whether the HIP runtime library (libamdhip64) can be found."""
    return ctypes.util.find_library("amdhip64") is not None


def hip_launcher_available() -> bool:
    """False: tl_runtime has no HIP launcher yet, whatever is installed.

    The ROCm runtime is still looked for, so the answer is the one the
    launcher will give once it exists (a runtime and the launcher).
    """
    launcher_written = False
    return launcher_written and rocm_runtime_present()


def always() -> bool:
    """The source-only spec's probe: generating AMDGPU assembly needs no ROCm."""
    return True
