"""Declared GPU adapters (``nvrtc``, ``torch``): availability probes now, launching with the GPU issue."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tl_runtime.adapters.base import Availability, CallFunction
from tl_runtime.checking import ArgumentChecker
from tl_runtime.manifest import Manifest


class NvrtcAdapter:
    """CUDA kernels compiled at load time with NVRTC (needs cuda-python and a GPU)."""

    key = "nvrtc"

    def __init__(self, manifest: Manifest, directory: Path, checker: ArgumentChecker) -> None:
        raise NotImplementedError(
            "the nvrtc adapter's loading and launching come with the GPU issue; only its "
            "availability probe exists"
        )

    @classmethod
    def probe(cls) -> Availability:
        """Available when cuda-python (``cuda.bindings`` or ``cuda``) is importable."""
        for name in ("cuda.bindings", "cuda"):
            try:
                if importlib.util.find_spec(name) is not None:
                    return Availability(
                        False, "cuda-python found, but the nvrtc adapter is not implemented yet"
                    )
            except (ImportError, ValueError):
                continue
        return Availability(False, "cuda-python is not installed")

    def make_call(self) -> CallFunction:
        """Not reached: construction raises."""
        raise NotImplementedError("nvrtc adapter")


class TorchAdapter:
    """Kernels launched through PyTorch (Metal on Apple machines)."""

    key = "torch"

    def __init__(self, manifest: Manifest, directory: Path, checker: ArgumentChecker) -> None:
        raise NotImplementedError(
            "the torch adapter's loading and launching come with the GPU issue; only its "
            "availability probe exists"
        )

    @classmethod
    def probe(cls) -> Availability:
        """Reports whether torch is importable (never imports it)."""
        if importlib.util.find_spec("torch") is None:
            return Availability(False, "torch is not installed")
        return Availability(False, "torch found, but the torch adapter is not implemented yet")

    def make_call(self) -> CallFunction:
        """Not reached: construction raises."""
        raise NotImplementedError("torch adapter")
