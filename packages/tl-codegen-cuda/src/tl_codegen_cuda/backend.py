"""``BACKEND``: the descriptor published under the ``tl.backends`` entry point ``cuda``.

Execution backends, in ``auto`` order; the two that run are loaded by the
``cuda_driver`` adapter, tl-runtime's CUDA launcher plug-in (the
tl-runtime-cuda distribution, found through ``tl.adapters``):

* ``cubin`` (alias ``tvm_ffi``, the name TileLang programs pass): nvcc builds
  a cubin at compile time; the launcher loads it through the CUDA driver
  (cuda-python), without apache-tvm. Building needs nvcc only (``can_build``),
  so ``tl compile`` exports a cubin on a machine without a GPU;
* ``nvrtc``: the artifact keeps CUDA C; the launcher compiles it with NVRTC
  for the device when it loads it;
* ``source``: source only and always available (no nvcc, no GPU), so
  ``tl_jit.lower``/``compile`` work anywhere; it names no adapter: loading
  such an artifact says it holds source only and names ``cubin`` and
  ``nvrtc``, which make one that runs.
"""

from __future__ import annotations

from tvm_ffi import DLDeviceType

from tl_backend_api import Backend, ExecutionBackendSpec

from .codegen import HOST_TARGET, CudaDeviceCodegen
from .device_presence import cuda_device_present
from .features import cuda_capabilities
from .pipeline import PIPELINE
from .probes import (
    CUDA_ADAPTER,
    cuda_driver_available,
    nvcc_present,
    nvrtc_available,
)
from .toolchain import Nvcc
from .traits import CUDA_TRAITS

_GPU_HINT = (
    "the CUDA launcher (pip install 'tl-codegen-cuda[run]', or on a deploy box "
    "'tl-runtime-cuda[cuda-python]') and an NVIDIA GPU with its driver"
)

BACKEND = Backend(
    name="cuda",
    target_kinds=("cuda",),
    pipelines={"cuda": PIPELINE},
    device_codegens={"cuda": CudaDeviceCodegen()},
    execution_backends=(
        ExecutionBackendSpec(
            "cubin",
            adapter=CUDA_ADAPTER,
            is_available=cuda_driver_available,
            enable_device_compile=True,
            install_hint=_GPU_HINT,
            aliases=("tvm_ffi",),
            # Building needs nvcc only: a cubin is exported where it cannot run.
            can_build=nvcc_present,
            build_hint="nvcc (the CUDA toolkit; TL_NVCC or CUDA_HOME to point at it)",
        ),
        ExecutionBackendSpec(
            "nvrtc",
            adapter=CUDA_ADAPTER,
            is_available=nvrtc_available,
            enable_device_compile=False,
            install_hint=_GPU_HINT,
        ),
        ExecutionBackendSpec(
            "source",
            adapter=None,
            enable_device_compile=False,
            build_hint="nothing: CUDA C is generated without nvcc or a GPU",
        ),
    ),
    capabilities=cuda_capabilities,
    toolchains={"nvcc": Nvcc()},
    # Target facts the core reads from the descriptor: device presence and
    # rank for target="auto", the host target device code runs under, the
    # 16-byte base alignment of the 128-bit global vector moves in the
    # generated code, the DLPack device types of the arrays it accepts, and
    # the language of T.import_source text (CUDA C, placed before the kernels).
    is_active=cuda_device_present,
    auto_kind="cuda",
    auto_priority=30,
    host_kind=HOST_TARGET,
    argument_alignment=CUDA_TRAITS.vector_bytes,
    argument_device_types=(int(DLDeviceType.kDLCUDA),),
    imported_source_language="cuda",
)
