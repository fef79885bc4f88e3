"""``BACKEND``: the descriptor published under the ``tl.backends`` entry point ``metal``.

Execution backends: ``source`` only (``enable_device_compile=False``): the
artifact holds the MSL; always available so ``tl_jit.lower`` works anywhere.
No Metal launcher exists yet, so the spec names no adapter; loading such an
artifact raises tl_runtime's SourceOnlyArtifactError (it holds source only).
"""

from __future__ import annotations

from tvm_ffi import DLDeviceType

from tl_backend_api import Backend, Capabilities, ExecutionBackendSpec

from .codegen import HOST_TARGET, MetalDeviceCodegen
from .device_presence import metal_device_present
from .pipeline import PIPELINE
from .traits import METAL_TRAITS

BACKEND = Backend(
    name="metal",
    target_kinds=("metal",),
    pipelines={"metal": PIPELINE},
    device_codegens={"metal": MetalDeviceCodegen()},
    execution_backends=(
        ExecutionBackendSpec(
            "source",
            adapter=None,
            enable_device_compile=False,
            build_hint="nothing: source generation needs no device",
        ),
    ),
    # Metal Shading Language has no double (and no fp8): a kernel computing in another float dtype is refused
    # before lowering (MissingCapabilityError), not by the shader compiler.
    capabilities=Capabilities(float_dtypes=frozenset({"float16", "bfloat16", "float32"})),
    # Target facts the core reads from the descriptor: device presence and
    # rank for target="auto", the host target device code runs under, the
    # 16-byte base alignment of the 128-bit global vector moves in the
    # generated code, and the DLPack device types of the arrays it accepts.
    is_active=metal_device_present,
    auto_kind="metal",
    auto_priority=10,
    host_kind=HOST_TARGET,
    argument_alignment=METAL_TRAITS.vector_bytes,
    argument_device_types=(int(DLDeviceType.kDLMetal),),
)
