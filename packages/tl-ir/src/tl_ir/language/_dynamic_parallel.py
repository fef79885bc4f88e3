"""``T.Parallel`` over a run-time extent.

A ``T.Parallel`` loop is distributed over a tile, so its trip count must be known when
the kernel is compiled. A run-time extent ``n`` (``span = T.min(valid_len, 512)``) is
accepted when it has a compile-time upper bound ``B``: after parsing, the loop becomes
``T.Parallel(B)`` whose body runs only for ``i < n``, which every target lowers like any
element-parallel loop. An extent with no such bound is a clear error.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.errors import KernelTypeError
from tl_ir.launch import rebuild_loop
from tl_ir.upper_bounds import UNBOUNDED, UpperBounds

__all__ = ["bound_dynamic_parallel_loops", "check_bounded_now"]


def bound_dynamic_parallel_loops(body: Any, extents: dict[Any, Any]) -> Any:
    """Rewrite each ``T.Parallel`` loop whose Var is a key of ``extents`` (its run-time
    extent) into a loop over the extent's upper bound guarded by ``var < extent``.

    Scalars assigned once earlier in the kernel (``span = T.min(n, 512)``: a one-element
    local buffer, or a let binding) count when bounding.

    Raises:
        KernelTypeError: an extent has no compile-time upper bound.
    """
    upper = UpperBounds(body)
    bounds: dict[Any, int] = {}
    for var, extent in extents.items():
        bound = upper.of(extent)
        if bound is None:
            raise _unbounded(extent)
        bounds[var] = max(bound, 1)

    def rewrite(loop: Any) -> Any:
        bound = bounds.get(loop.loop_var)
        if bound is None:
            return loop
        guarded = tirx.IfThenElse(loop.loop_var < extents[loop.loop_var], loop.body, None)
        return rebuild_loop(loop, extent=tirx.IntImm(str(loop.extent.dtype), bound), body=guarded)

    return tvm_ffi.structural_map(body, (tirx.For, rewrite), order="post")


def _unbounded(extent: Any) -> KernelTypeError:
    return KernelTypeError(
        f"T.Parallel(*extents): the run-time extent {extent} has no compile-time upper "
        "bound (the loop is distributed over a tile); bound it, e.g. "
        "T.Parallel(T.min(n, MAX)), or use T.serial"
    )


def check_bounded_now(extent: Any) -> None:
    """Raise at the loop's line for an extent that reads no kernel scalar (so nothing
    assigned later in the kernel can bound it) and has no upper bound.

    Raises:
        KernelTypeError: such an extent without a compile-time upper bound.
    """
    loads: list[Any] = []
    tvm_ffi.structural_walk(extent, (tvm.ir.TensorLoad, loads.append), order="pre")
    if loads:
        return
    if int(tvm.sym.Analyzer().const_int_bound(extent).max_value) >= UNBOUNDED:
        raise _unbounded(extent)
