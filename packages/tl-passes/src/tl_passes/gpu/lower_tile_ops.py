"""`gpu-lower-tile-ops`: tile ops and ``T.Parallel`` nests become per-thread code.

Input: a kernel as ``tl_ir.language`` builds it, after `gpu-insert-barriers`.
Output: plain TIR over ``threadIdx``/``blockIdx`` that TVM's GPU codegens
accept. `KernelLowering` holds the kernel's threads, layouts and iteration
drivers; each tile op is lowered by its own module (`copy`, `fill`, `gemm`,
`reduce`, `cumsum`, `atomics`, `parallel`; named barriers: `named_barriers`; device
assertions: `device_asserts`), and
whatever differs between GPU backends comes from the pass's `GpuTraits`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from tvm import tirx

from tl_passes.gpu.device_asserts import lower_device_asserts
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.kernel import KernelLowering
from tl_passes.gpu.named_barriers import lower_named_barriers
from tl_passes.gpu.traits import PORTABLE_TRAITS, GpuTraits
from tl_passes.pass_base import PassContext, PrimFuncPass


def lower_gpu_tile_ops(func: Any, traits: GpuTraits, target: Any | None = None) -> Any:
    """Lower one kernel (see the module docstring); a PrimFunc without a
    ``T.Kernel`` comes back as is (the pass lowers each of several consecutive
    ``T.Kernel`` launches through this, `tl_passes.gpu.launches`).

    Args:
        func: the PrimFunc (tile ops, ``T.Kernel``).
        traits: what the target's codegen offers (shuffles, atomics, vectors).
        target: the TVM target; read only when ``traits.warp_size`` is None.

    Raises:
        GpuLoweringError: a construct the GPU lowering, or the target's
            traits, does not support.
        LayoutError: a fragment cannot be laid out.
    """
    from tl_ir.launch import kernel_launch

    if kernel_launch(func) is None:
        return func
    lowering = KernelLowering(func, traits, target)
    body = lower_named_barriers(lowering.lower(), traits, lowering.num_threads, lowering.warp_size)
    symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
    body = lower_device_asserts(body, traits, "" if symbol is None else str(symbol))
    return func.with_body(body)


@dataclass(frozen=True)
class GpuLowerTileOpsPass(PrimFuncPass):
    """Turn tile ops and ``T.Parallel`` nests into per-thread code (module docstring).

    Args:
        traits: the backend's `GpuTraits` (default: `PORTABLE_TRAITS`, no
            shuffles and no atomics).
    """

    name: ClassVar[str] = "gpu-lower-tile-ops"
    traits: GpuTraits = field(default=PORTABLE_TRAITS)

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` lowered for ``self.traits`` and ``ctx.target``.

        Raises:
            GpuLoweringError: as `lower_gpu_tile_ops`, the message prefixed with
                the pass and function name.
        """
        from tl_passes.gpu.launches import map_kernels

        try:
            result, _ = map_kernels(
                func, lambda kernel: lower_gpu_tile_ops(kernel, self.traits, ctx.target)
            )
        except GpuLoweringError as exc:
            raise GpuLoweringError(f"{self.where(function_name)}: {exc}") from exc
        return result
