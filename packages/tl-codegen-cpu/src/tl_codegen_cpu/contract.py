"""Static conformance: mypy --strict checks these assignments against the Protocols."""

from __future__ import annotations

from tl_backend_api import Backend, DeviceCodegen, PassPipeline, Toolchain
from tl_codegen_cpu.backend import BACKEND
from tl_codegen_cpu.codegen import CpuDeviceCodegen
from tl_codegen_cpu.gcc import GccToolchain
from tl_codegen_cpu.pipeline import C_PIPELINE, LLVM_PIPELINE


def check_types() -> None:
    """Never needs to run: type-checking it is the check."""
    descriptor: Backend = BACKEND
    c_codegen: DeviceCodegen = CpuDeviceCodegen("c")
    llvm_codegen: DeviceCodegen = CpuDeviceCodegen("llvm")
    c_pipeline: PassPipeline = C_PIPELINE
    llvm_pipeline: PassPipeline = LLVM_PIPELINE
    toolchain: Toolchain = GccToolchain()
    del descriptor, c_codegen, llvm_codegen, c_pipeline, llvm_pipeline, toolchain
