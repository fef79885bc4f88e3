"""Static conformance: every installed backend's parts satisfy the Protocols.

mypy --strict checks each annotated assignment below, structlog-style:
``x: Protocol = implementation`` fails type-checking when a member is
missing or has the wrong signature (``isinstance`` on a runtime-checkable
Protocol only checks names). A backend package installed in CI adds its
block here; contracts/test_conformance.py fails until it does.
"""

from __future__ import annotations

from collections.abc import Mapping

from tl_backend_api import (
    Backend,
    DeviceCodegen,
    HostCodegen,
    PassPipeline,
    StagedPipeline,
    Toolchain,
)
from tl_backend_dummy import backend as dummy_backend
from tl_backend_dummy.codegen import DummyDeviceCodegen, DummyHostCodegen
from tl_backend_dummy.pipeline import PIPELINE as DUMMY_PIPELINE
from tl_backend_dummy.toolchain import DummyPackager
from tl_codegen_cpu import backend as cpu_backend
from tl_codegen_cpu.codegen import CpuDeviceCodegen
from tl_codegen_cpu.pipeline import C_PIPELINE as CPU_C_PIPELINE
from tl_codegen_cpu.pipeline import LLVM_PIPELINE as CPU_LLVM_PIPELINE
from tl_codegen_cpu.toolchain import GccToolchain
from tl_codegen_cuda import backend as cuda_backend
from tl_codegen_cuda.codegen import CudaDeviceCodegen
from tl_codegen_cuda.pipeline import PIPELINE as CUDA_PIPELINE
from tl_codegen_cuda.toolchain import Nvcc
from tl_codegen_hip import backend as hip_backend
from tl_codegen_hip.codegen import HipDeviceCodegen
from tl_codegen_hip.pipeline import PIPELINE as HIP_PIPELINE
from tl_codegen_hip.toolchain import Lld
from tl_codegen_metal import backend as metal_backend
from tl_codegen_metal.codegen import MetalDeviceCodegen
from tl_codegen_metal.pipeline import PIPELINE as METAL_PIPELINE
from tl_codegen_webgpu import backend as webgpu_backend
from tl_codegen_webgpu.codegen import WebGpuDeviceCodegen
from tl_codegen_webgpu.pipeline import PIPELINE as WEBGPU_PIPELINE

# tl_backend_api's own ready-made pipeline is a PassPipeline.
staged_pipeline: type[PassPipeline] = StagedPipeline

# ---- tl-backend-dummy (integration_tests/plugins/tl-backend-dummy), kind "opencl"
dummy_descriptor: Backend = dummy_backend.BACKEND
dummy_pipeline: PassPipeline = DUMMY_PIPELINE
dummy_device_codegen: DeviceCodegen = DummyDeviceCodegen()
dummy_host_codegen: HostCodegen = DummyHostCodegen()
dummy_toolchain: Toolchain = DummyPackager()

# ---- tl-codegen-cpu (packages/tl-codegen-cpu), kinds "c" and "llvm"
cpu_descriptor: Backend = cpu_backend.BACKEND
cpu_c_pipeline: PassPipeline = CPU_C_PIPELINE
cpu_llvm_pipeline: PassPipeline = CPU_LLVM_PIPELINE
cpu_c_codegen: DeviceCodegen = CpuDeviceCodegen("c")
cpu_llvm_codegen: DeviceCodegen = CpuDeviceCodegen("llvm")
cpu_toolchain: Toolchain = GccToolchain()

# ---- tl-codegen-cuda (packages/tl-codegen-cuda), kind "cuda"
cuda_descriptor: Backend = cuda_backend.BACKEND
cuda_pipeline: PassPipeline = CUDA_PIPELINE
cuda_codegen: DeviceCodegen = CudaDeviceCodegen()
cuda_toolchain: Toolchain = Nvcc()

# ---- tl-codegen-hip (packages/tl-codegen-hip), kind "rocm"
hip_descriptor: Backend = hip_backend.BACKEND
hip_pipeline: PassPipeline = HIP_PIPELINE
hip_codegen: DeviceCodegen = HipDeviceCodegen()
hip_toolchain: Toolchain = Lld()

# ---- tl-codegen-metal (packages/tl-codegen-metal), kind "metal"
metal_descriptor: Backend = metal_backend.BACKEND
metal_pipeline: PassPipeline = METAL_PIPELINE
metal_codegen: DeviceCodegen = MetalDeviceCodegen()

# ---- tl-codegen-webgpu (packages/tl-codegen-webgpu), kind "webgpu"
webgpu_descriptor: Backend = webgpu_backend.BACKEND
webgpu_pipeline: PassPipeline = WEBGPU_PIPELINE
webgpu_codegen: DeviceCodegen = WebGpuDeviceCodegen()

#: Backend name -> its descriptor, for every backend checked statically above.
STATICALLY_CHECKED: Mapping[str, Backend] = {
    dummy_descriptor.name: dummy_descriptor,
    cpu_descriptor.name: cpu_descriptor,
    cuda_descriptor.name: cuda_descriptor,
    hip_descriptor.name: hip_descriptor,
    metal_descriptor.name: metal_descriptor,
    webgpu_descriptor.name: webgpu_descriptor,
}
