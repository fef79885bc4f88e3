"""Device codegen for 'metal': Metal Shading Language through TVM's Metal codegen."""

from __future__ import annotations

from tvm import IRModule
from tvm.target import Target

from tl_backend_api import DeviceBuildResult, KernelSources
from tl_backend_api.gpu.sources import emit_single_source

#: The host target the kernels' host side is built for when the target names none
#: (TVM's LLVM CPU codegen; the launch itself runs through the runtime's adapter).
HOST_TARGET = "llvm"


class MetalDeviceCodegen:
    """The `tl_backend_api.DeviceCodegen` of the metal backend.

    Metal source is compiled by the Metal framework when a kernel is loaded
    (on an Apple machine), so ``build`` gives the source and no binary.
    """

    def emit_source(self, mod: IRModule, target: Target) -> KernelSources:
        """``<name>.metal`` (MSL) and its launches; runs no compiler.

        Raises:
            ValueError: ``mod`` holds no kernel.
            ToolchainError: TVM's code generation failed (its message).
        """
        return emit_single_source(
            mod, target, language="metal", extension="metal", host=HOST_TARGET
        )

    def build(self, mod: IRModule, target: Target) -> DeviceBuildResult:
        """The MSL source (Metal compiles it at load; no offline compiler runs here)."""
        return DeviceBuildResult(sources=self.emit_source(mod, target))
