"""``BACKEND``: the descriptor published under the ``tl.backends`` entry point ``webgpu``.

No execution backend here can run WebGPU kernels: the one spec, ``source``,
is source only (``enable_device_compile=False``) and exists so that
``tl_jit.lower(func, target="webgpu")`` (and ``tl_jit.compile``, which
then writes a source-only artifact) work anywhere. Running needs a WebGPU
implementation (a browser, wgpu, Dawn) outside this project, so the spec
names no adapter: loading a WebGPU artifact with tl_runtime raises
SourceOnlyArtifactError (it holds source only; docs/gpu.md).
"""

from __future__ import annotations

from tvm_ffi import DLDeviceType

from tl_backend_api import Backend, Capabilities, ExecutionBackendSpec

from .codegen import HOST_TARGET, WebGpuDeviceCodegen
from .pipeline import PIPELINE
from .traits import WEBGPU_TRAITS

BACKEND = Backend(
    name="webgpu",
    target_kinds=("webgpu",),
    pipelines={"webgpu": PIPELINE},
    device_codegens={"webgpu": WebGpuDeviceCodegen()},
    execution_backends=(
        ExecutionBackendSpec(
            "source",
            adapter=None,
            enable_device_compile=False,
            build_hint="nothing: WGSL is generated anywhere; no runtime here runs it",
        ),
    ),
    # WGSL has no f64 (and no fp8 or bf16) and its integers are i32 and u32 only: a kernel
    # computing in another dtype is refused before lowering (MissingCapabilityError), not by
    # the shader compiler.
    capabilities=Capabilities(
        float_dtypes=frozenset({"float16", "float32"}),
        integer_dtypes=frozenset({"int32", "uint32"}),
    ),
    # No auto_kind: nothing here runs WGSL, so target="auto" never picks it.
    host_kind=HOST_TARGET,
    argument_alignment=WEBGPU_TRAITS.vector_bytes,
    argument_device_types=(int(DLDeviceType.kDLWebGPU),),
)
