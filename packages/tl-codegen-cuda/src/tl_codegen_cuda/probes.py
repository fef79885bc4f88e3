"""Availability probes of the cuda execution backends (each calls the CUDA driver
through tl_runtime's CUDA adapter)."""

from __future__ import annotations

import importlib.util

from tl_runtime import adapter_availability


def cuda_driver_available() -> bool:
    """True with cuda-python and a visible NVIDIA GPU (the driver is called)."""
    return adapter_availability("cuda_driver").available


def nvrtc_available() -> bool:
    """True with cuda-python's NVRTC bindings and a visible NVIDIA GPU."""
    for name in ("cuda.bindings.nvrtc", "cuda.nvrtc"):
        try:
            if importlib.util.find_spec(name) is not None:
                return cuda_driver_available()
        except (ImportError, ValueError):
            continue
    return False


def always() -> bool:
    """The source-only spec's probe: generating CUDA C needs neither nvcc nor a GPU."""
    return True
