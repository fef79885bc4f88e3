"""Device codegen for 'webgpu': WGSL through TVM's WebGPU codegen."""

from __future__ import annotations

from tvm import IRModule
from tvm.target import Target

from tl_backend_api import DeviceBuildResult, KernelSources
from tl_backend_api.gpu.sources import emit_single_source

#: The host target the kernels' host side is built for when the target names none
#: (TVM's LLVM CPU codegen; the launch itself runs through the runtime's adapter).
HOST_TARGET = "llvm"


class WebGpuDeviceCodegen:
    """The `tl_backend_api.DeviceCodegen` of the webgpu backend.

    WGSL is compiled by the WebGPU implementation that runs it (a browser,
    wgpu/Dawn), none of which this project drives: ``build`` gives the
    source and no binary.
    """

    def emit_source(self, mod: IRModule, target: Target) -> KernelSources:
        """``<name>.wgsl`` (WGSL) and its launches; runs no compiler.

        Raises:
            ValueError: ``mod`` holds no kernel.
            ToolchainError: TVM's code generation failed (its message).
        """
        return emit_single_source(mod, target, language="wgsl", extension="wgsl", host=HOST_TARGET)

    def build(self, mod: IRModule, target: Target) -> DeviceBuildResult:
        """The WGSL source (a WebGPU implementation compiles it; none runs here)."""
        return DeviceBuildResult(sources=self.emit_source(mod, target))
