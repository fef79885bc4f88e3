"""Availability probes of the cuda execution backends: each asks tl-runtime about the
``cuda_driver`` adapter (the tl-runtime-cuda launcher, found through ``tl.adapters``),
whose own probe calls the CUDA driver; nothing here imports the launcher."""

from __future__ import annotations

import importlib.util

from tl_runtime import adapter_availability

CUDA_ADAPTER = "cuda_driver"
"""The adapter key of the CUDA launcher (tl-runtime-cuda's ``tl.adapters`` entry point)."""


def cuda_driver_available() -> bool:
    """True with the CUDA launcher, cuda-python and a visible NVIDIA GPU (the driver is
    called); False when tl-runtime-cuda is not installed."""
    return adapter_availability(CUDA_ADAPTER).available


def nvrtc_available() -> bool:
    """True with cuda-python's NVRTC bindings and what `cuda_driver_available` needs."""
    for name in ("cuda.bindings.nvrtc", "cuda.nvrtc"):
        try:
            if importlib.util.find_spec(name) is not None:
                return cuda_driver_available()
        except (ImportError, ValueError):
            continue
    return False


def nvcc_present() -> bool:
    """The cubin spec's build probe: nvcc is found (`Nvcc.executable`); building a cubin
    needs neither a GPU nor its driver nor cuda-python."""
    from .toolchain import Nvcc

    return Nvcc().executable() is not None
