"""Execution adapters by key (the names ``ExecutionBackendSpec.adapter`` uses)."""

from __future__ import annotations

from tl_runtime.adapters.base import Adapter, Availability, CallFunction
from tl_runtime.adapters.cuda_driver import CudaDriverAdapter
from tl_runtime.adapters.cython_adapter import CythonAdapter
from tl_runtime.adapters.gpu import NvrtcAdapter, TorchAdapter
from tl_runtime.adapters.tvm_ffi_adapter import TvmFfiAdapter

ADAPTERS: dict[str, type[Adapter]] = {
    TvmFfiAdapter.key: TvmFfiAdapter,
    CythonAdapter.key: CythonAdapter,
    CudaDriverAdapter.key: CudaDriverAdapter,
    TorchAdapter.key: TorchAdapter,
}
"""Every adapter this runtime declares. There is no ``ctypes`` adapter."""


def adapter_availability(key: str) -> Availability:
    """Return whether the adapter ``key`` can run here (unknown keys are unavailable)."""
    adapter = ADAPTERS.get(key)
    if adapter is None:
        return Availability(False, f"unknown adapter {key!r}; known: {sorted(ADAPTERS)}")
    return adapter.probe()


__all__ = [
    "ADAPTERS",
    "Adapter",
    "Availability",
    "CallFunction",
    "CudaDriverAdapter",
    "CythonAdapter",
    "NvrtcAdapter",
    "TorchAdapter",
    "TvmFfiAdapter",
    "adapter_availability",
]
