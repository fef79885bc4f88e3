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

__all__ = ["bound_dynamic_parallel_loops", "check_bounded_now"]

#: A bound at or above this is no bound (the extent's dtype maximum).
_UNBOUNDED = 2**31 - 1


def bound_dynamic_parallel_loops(body: Any, extents: dict[Any, Any]) -> Any:
    """Rewrite each ``T.Parallel`` loop whose Var is a key of ``extents`` (its run-time
    extent) into a loop over the extent's upper bound guarded by ``var < extent``.

    Scalars assigned once earlier in the kernel (``span = T.min(n, 512)``: a one-element
    local buffer, or a let binding) count when bounding.

    Raises:
        KernelTypeError: an extent has no compile-time upper bound.
    """
    analyzer = tvm.sym.Analyzer()
    for kind in (tirx.Bind, tirx.LetStmt):
        tvm_ffi.structural_walk(
            body, (kind, lambda node: analyzer.bind(node.var, node.value)), order="pre"
        )
    stores: dict[Any, list[Any]] = {}

    def record(store: Any) -> None:
        stores.setdefault(store.buffer, []).append(store.value)

    tvm_ffi.structural_walk(body, (tirx.BufferStore, record), order="pre")

    def resolve(expr: Any, depth: int = 0) -> Any:
        def load(node: Any) -> Any:
            values = stores.get(node.source, [])
            if depth < 16 and len(values) == 1 and _is_scalar_buffer(node.source):
                return resolve(values[0], depth + 1)
            return node

        return tvm_ffi.structural_map(expr, (tvm.ir.TensorLoad, load), order="post")

    bounds: dict[Any, int] = {}
    for var, extent in extents.items():
        bound = int(analyzer.const_int_bound(resolve(extent)).max_value)
        if bound >= _UNBOUNDED:
            raise _unbounded(extent)
        bounds[var] = max(bound, 1)

    def rewrite(loop: Any) -> Any:
        bound = bounds.get(loop.loop_var)
        if bound is None:
            return loop
        guarded = tirx.IfThenElse(loop.loop_var < extents[loop.loop_var], loop.body, None)
        return rebuild_loop(loop, extent=tirx.IntImm(str(loop.extent.dtype), bound), body=guarded)

    return tvm_ffi.structural_map(body, (tirx.For, rewrite), order="post")


def _is_scalar_buffer(buffer: Any) -> bool:
    shape = list(buffer.ty.shape)
    return len(shape) == 1 and isinstance(shape[0], tirx.IntImm) and int(shape[0]) == 1


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
    if int(tvm.sym.Analyzer().const_int_bound(extent).max_value) >= _UNBOUNDED:
        raise _unbounded(extent)
