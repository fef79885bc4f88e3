"""``BACKEND``: the descriptor published under the ``tl.backends`` entry point ``rocm``.

One execution backend, ``source``: source only and always available, so
``tl_jit.lower(func, target="rocm")`` gives the AMDGPU assembly anywhere.
It names no adapter: no HIP launcher exists yet, so loading such an
artifact raises tl_runtime's SourceOnlyArtifactError. A launcher would be its
own runtime plug-in distribution (like tl-runtime-cuda) registering under the
``tl.adapters`` entry-point group, declared here as another execution backend.
"""

from __future__ import annotations

from tvm_ffi import DLDeviceType

from tl_backend_api import Backend, ExecutionBackendSpec

from .codegen import (
    BITCODE_CALLBACK,
    HOST_TARGET,
    LINK_CALLBACK,
    HipDeviceCodegen,
    keep_object,
    no_device_libraries,
)
from .device_presence import rocm_device_present
from .pipeline import PIPELINE
from .toolchain import Lld
from .traits import HIP_TRAITS

BACKEND = Backend(
    name="hip",
    target_kinds=("rocm",),
    pipelines={"rocm": PIPELINE},
    device_codegens={"rocm": HipDeviceCodegen()},
    execution_backends=(
        ExecutionBackendSpec(
            "source",
            adapter=None,
            enable_device_compile=False,
            build_hint="nothing: AMDGPU assembly is generated anywhere",
        ),
    ),
    callbacks={BITCODE_CALLBACK: no_device_libraries, LINK_CALLBACK: keep_object},
    toolchains={"ld.lld": Lld()},
    # Target facts the core reads from the descriptor: device presence and
    # rank for target="auto", the host target device code runs under, the
    # 16-byte base alignment of the 128-bit global vector moves in the
    # generated code, and the DLPack device types of the arrays it accepts.
    is_active=rocm_device_present,
    auto_kind="rocm",
    auto_priority=20,
    kind_aliases={"hip": "rocm"},  # TVM has no kind named hip
    host_kind=HOST_TARGET,
    argument_alignment=HIP_TRAITS.vector_bytes,
    argument_device_types=(int(DLDeviceType.kDLROCM),),
)
