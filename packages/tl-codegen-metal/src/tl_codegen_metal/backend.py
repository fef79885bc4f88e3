"""``BACKEND``: the descriptor published under the ``tl.backends`` entry point ``metal``.

Execution backends, in ``auto`` order:

* ``torch``: MSL run through PyTorch's MPS device on an Apple machine
  (tl_runtime's ``torch`` adapter; its Metal launcher is not written yet,
  so the probe says no everywhere for now);
* ``source``: source only (``enable_device_compile=False``): the artifact
  holds the MSL; always available so ``tl_jit.lower`` works anywhere.
  Loading such an artifact goes to the ``torch`` adapter, which says what
  is missing.
"""

from __future__ import annotations

from tvm_ffi import DLDeviceType

from tl_backend_api import Backend, ExecutionBackendSpec

from .codegen import MetalDeviceCodegen
from .device_presence import metal_device_present
from .pipeline import PIPELINE
from .probes import always, torch_mps_available

BACKEND = Backend(
    name="metal",
    target_kinds=("metal",),
    pipelines={"metal": PIPELINE},
    device_codegens={"metal": MetalDeviceCodegen()},
    execution_backends=(
        ExecutionBackendSpec(
            "torch",
            adapter="torch",
            is_available=torch_mps_available,
            enable_device_compile=False,
            install_hint="an Apple machine with torch (MPS) and tl_runtime's Metal launcher "
            "(not written yet)",
        ),
        ExecutionBackendSpec(
            "source",
            adapter="torch",
            is_available=always,
            enable_device_compile=False,
            install_hint="nothing: source generation needs no device",
        ),
    ),
    # Target facts the core reads from the descriptor: device presence and
    # rank for target="auto", the host target device code runs under, the
    # 16-byte base alignment of the 128-bit global vector moves in the
    # generated code, and the DLPack device types of the arrays it accepts.
    is_active=metal_device_present,
    auto_kind="metal",
    auto_priority=10,
    host_kind="llvm",
    argument_alignment=16,
    argument_device_types=(int(DLDeviceType.kDLMetal),),
)
