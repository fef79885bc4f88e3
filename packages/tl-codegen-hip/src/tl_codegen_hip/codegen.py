"""Device codegen for 'rocm': AMDGPU assembly and LLVM IR through TVM, without ROCm.

TVM's AMDGPU codegen calls two Python callbacks: ``tvm_callback_rocm_bitcode_path``
(the ROCm device libraries to link; here none, so kernels must not need
ocml/ockl math) and ``tvm_callback_rocm_link`` (ld.lld on the object). The
source-only path replaces the link with "keep the object", so no ROCm tool
runs; `HipDeviceCodegen.build` links with ld.lld.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import tvm_ffi
from tvm import IRModule
from tvm.target import Target

from tl_backend_api import DeviceBuildResult, KernelSources, ToolchainError
from tl_backend_api.gpu.build import DeviceModule
from tl_backend_api.gpu.sources import (
    build_device_sources,
    device_kernel_sources,
    module_kernel_name,
)

from .toolchain import Lld

BITCODE_CALLBACK = "tvm_callback_rocm_bitcode_path"
LINK_CALLBACK = "tvm_callback_rocm_link"
#: What TVM's ROCm device module is read as: AMDGPU assembly, then LLVM IR.
_SOURCE_FORMATS = ("asm", "")

#: The host target the kernels' host side is built for when the target names none
#: (TVM's LLVM CPU codegen; the launch itself runs through the runtime's adapter).
HOST_TARGET = "llvm"


def no_device_libraries(rocdl_dir: Any = None) -> list[str]:
    """The bitcode-path callback: no ROCm device libraries are linked."""
    return []


def keep_object(object_bytes: Any) -> Any:
    """The link callback of the source-only path: the relocatable object, unlinked."""
    return object_bytes


def install_source_only_callbacks() -> None:
    """Register the two callbacks so TVM's AMDGPU codegen runs without ROCm."""
    tvm_ffi.register_global_func(BITCODE_CALLBACK, no_device_libraries, override=True)
    tvm_ffi.register_global_func(LINK_CALLBACK, keep_object, override=True)


def amdgpu_sources(mod: IRModule, device: DeviceModule) -> KernelSources:
    """The hip `KernelSources` of a built device module: ``<name>.s`` (AMDGPU
    assembly) and ``<name>.ll`` (LLVM IR), with one launch per device kernel.

    Raises:
        ValueError: ``mod`` holds no kernel.
    """
    name = module_kernel_name(mod)
    return device_kernel_sources(
        device,
        language="amdgpu",
        files={f"{name}.s": device.sources["asm"], f"{name}.ll": device.sources[""]},
    )


class HipDeviceCodegen:
    """The `tl_backend_api.DeviceCodegen` of the hip backend."""

    def __init__(self, linker: Lld | None = None) -> None:
        self.linker = linker or Lld()

    def emit_source(self, mod: IRModule, target: Target) -> KernelSources:
        """AMDGPU assembly (``<name>.s``), LLVM IR (``<name>.ll``) and the kernel
        description; runs no ROCm tool.

        Raises:
            ToolchainError: TVM's code generation failed (its message).
        """
        install_source_only_callbacks()
        device = build_device_sources(mod, target, host=HOST_TARGET, source_formats=_SOURCE_FORMATS)
        return amdgpu_sources(mod, device)

    def build(self, mod: IRModule, target: Target) -> DeviceBuildResult:
        """The sources plus a code object (``<name>.hsaco``) linked by ld.lld.

        Raises:
            ToolchainError: ld.lld is missing (no ROCm) or failed; codegen failed.
        """
        info = self.linker.discover()
        if info is None:
            raise ToolchainError(
                "building for rocm needs ld.lld (ROCm) to link the code object; "
                "emit_source works without it"
            )
        name = module_kernel_name(mod)
        linked: list[bytes] = []
        with tempfile.TemporaryDirectory(prefix="tl-hip-") as scratch:
            obj = Path(scratch) / f"{name}.o"
            out = Path(scratch) / f"{name}.hsaco"

            def link(object_bytes: Any) -> Any:
                obj.write_bytes(bytes(object_bytes))
                self.linker.compile_shared_object([obj], out)
                data = out.read_bytes()
                linked.append(data)
                return bytearray(data)

            tvm_ffi.register_global_func(BITCODE_CALLBACK, no_device_libraries, override=True)
            tvm_ffi.register_global_func(LINK_CALLBACK, link, override=True)
            try:
                device = build_device_sources(
                    mod, target, host=HOST_TARGET, source_formats=_SOURCE_FORMATS
                )
            finally:
                install_source_only_callbacks()
        if not linked:
            raise ToolchainError("TVM's AMDGPU codegen never asked to link a code object")
        return DeviceBuildResult(
            sources=amdgpu_sources(mod, device),
            binaries={f"{name}.hsaco": linked[-1]},
            toolchain_versions={"ld.lld": info.version},
        )
