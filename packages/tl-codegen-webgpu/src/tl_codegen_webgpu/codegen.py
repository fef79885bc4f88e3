"""Device codegen for 'webgpu': WGSL through TVM's WebGPU codegen."""

from __future__ import annotations

import json

from tvm import IRModule
from tvm.target import Target

from tl_backend_api import DeviceBuildResult, KernelLaunch, KernelSources, ToolchainError
from tl_passes.gpu_device_build import DeviceBuildError, build_device_module


def kernel_name(mod: IRModule) -> str:
    """The name of the module's kernel (its first PrimFunc's global symbol)."""
    for global_var, func in mod.functions.items():
        symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
        return str(symbol) if symbol is not None else str(global_var.name_hint)
    raise ValueError("mod: expected a module with one kernel, got an empty module")


class WebGpuDeviceCodegen:
    """The `tl_backend_api.DeviceCodegen` of the webgpu backend.

    WGSL is compiled by the WebGPU implementation that runs it (a browser,
    wgpu/Dawn), none of which this project drives: ``build`` gives the
    source and no binary.
    """

    def emit_source(self, mod: IRModule, target: Target) -> KernelSources:
        """``<name>.wgsl`` (WGSL) and ``<name>.kernel.json``; runs no compiler.

        Raises:
            ToolchainError: TVM's code generation failed (its message).
        """
        name = kernel_name(mod)
        try:
            device = build_device_module(mod, target)
        except DeviceBuildError as exc:
            raise ToolchainError(str(exc)) from exc
        kernel = device.kernels[0]
        description = {
            "symbol": kernel.symbol,
            "arguments": [argument.to_json() for argument in kernel.arguments],
        }
        return KernelSources(
            language="wgsl",
            files={
                f"{name}.wgsl": device.sources[""],
                f"{name}.kernel.json": json.dumps(description, indent=1),
            },
            entry_symbol=kernel.symbol,
            launches=tuple(
                KernelLaunch(
                    kernel_name=k.symbol,
                    grid=k.grid,
                    block=k.block,
                    dynamic_shared_memory_bytes=k.dynamic_shared_memory,
                )
                for k in device.kernels
            ),
        )

    def build(self, mod: IRModule, target: Target) -> DeviceBuildResult:
        """The WGSL source (a WebGPU implementation compiles it; none runs here)."""
        return DeviceBuildResult(sources=self.emit_source(mod, target))
