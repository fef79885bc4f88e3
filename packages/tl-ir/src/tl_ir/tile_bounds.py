"""Compile-time check of tile accesses that certainly leave their tile.

A shared, fragment or local tile is sized by the kernel, and its element accesses are
not guarded (global accesses are: `tl_ir.global_access_guards`). An access whose index
runs past the tile for some iteration of the loops around it writes (or reads) memory
that is not the tile's: on the CPU targets another array of the block, or the stack.
TileLang's ``sinks = T.alloc_fragment([heads])`` filled from ``for i in
T.Parallel(block_M): sinks[i] = ...`` is such a program (on a GPU each thread keeps
its own register, and the kernel happens to work).

Here an access is refused when it certainly happens and certainly leaves the tile:
no ``if`` or ``T.if_then_else`` branch lies around it, every loop around it has a
constant extent (at least 1) and start, and each index is an affine combination of
those loop variables and launched indices with constant coefficients, so the range
TVM's analyzer gives for it is the range it takes. Any other access is left to the
kernel (and to checked mode, ``debug=True``, which reports it at run time).
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir import scopes
from tl_ir.errors import KernelTypeError
from tl_ir.global_access_guards import branch_conditions

__all__ = ["check_tile_bounds"]


def _iteration_ranges(body: Any) -> dict[int, tuple[Any, int, int]]:
    """Handle of each loop variable and launched index with a constant range of at
    least one value, defined once -> (var, first, last)."""
    found: dict[int, list[tuple[Any, int, int]]] = {}

    def record(var: Any, start: Any, extent: Any) -> None:
        first, count = _ops.const_int(start), _ops.const_int(extent)
        entry = (var, first, first + count - 1) if first is not None and count else None
        found.setdefault(int(var.__chandle__()), []).append(entry)  # type: ignore[arg-type]

    def visit_for(loop: Any) -> None:
        record(loop.loop_var, loop.min, loop.extent)

    def visit_attr(attr: Any) -> None:
        if attr.attr_key == "thread_extent" and isinstance(attr.node, tirx.IterVar):
            record(attr.node.var, 0, attr.value)

    tvm_ffi.structural_walk(body, [(tirx.For, visit_for), (tirx.AttrStmt, visit_attr)])
    return {
        handle: entries[0]
        for handle, entries in found.items()
        if len(entries) == 1 and entries[0] is not None and entries[0][2] >= entries[0][1]
    }


def _affine_range(index: Any, ranges: dict[int, tuple[Any, int, int]]) -> tuple[int, int] | None:
    """The exact range of ``index`` when it is an affine combination of the variables
    in ``ranges`` (each appearing once) with constant coefficients, else None."""
    seen: set[int] = set()

    def walk(expr: Any) -> tuple[int, int] | None:
        value = _ops.const_int(expr)
        if value is not None:
            return value, value
        if isinstance(expr, tirx.Var):
            handle = int(expr.__chandle__())
            if handle not in ranges or handle in seen:
                return None  # unknown, or a variable used twice (i - i is not [lo-hi, hi-lo])
            seen.add(handle)
            _, first, last = ranges[handle]
            return first, last
        if isinstance(expr, tirx.Cast) and "int" in str(expr.ty.dtype):
            return walk(expr.value)
        if isinstance(expr, tirx.Add | tirx.Sub):
            left, right = walk(expr.a), walk(expr.b)
            if left is None or right is None:
                return None
            if isinstance(expr, tirx.Add):
                return left[0] + right[0], left[1] + right[1]
            return left[0] - right[1], left[1] - right[0]
        if isinstance(expr, tirx.Mul):
            for factor_expr, other in ((expr.a, expr.b), (expr.b, expr.a)):
                factor = _ops.const_int(factor_expr)
                if factor is not None:
                    inner = walk(other)
                    if inner is None:
                        return None
                    products = (inner[0] * factor, inner[1] * factor)
                    return min(products), max(products)
        return None

    return walk(index)


def _tile_problem(buffer: Any, indices: Any, ranges: dict[int, tuple[Any, int, int]]) -> str | None:
    ty = getattr(buffer, "ty", None)
    if not isinstance(ty, tirx.BufferType) or scopes.buffer_scope(buffer) == scopes.GLOBAL:
        return None
    shape = list(ty.shape)
    if len(shape) != len(indices):
        return None
    for dim, (index, size) in enumerate(zip(indices, shape, strict=True)):
        extent = _ops.const_int(size)
        if extent is None or _ops.const_int(index) is not None:
            continue  # a run-time extent; a constant index (`tl_ir.bounds` checks it)
        if tvm.DataType(str(index.dtype)).lanes != 1:
            continue
        taken = _affine_range(index, ranges)
        if taken is None or (taken[0] >= -extent and taken[1] < extent):
            continue
        reached = taken[1] if taken[1] >= extent else taken[0]
        scope = str(scopes.buffer_scope(buffer))
        kind = "fragment" if "fragment" in scope else scope.split(".")[0]
        return (
            f"index {index} of {kind} tile {buffer.name} is out of bounds in dim {dim}: the "
            f"loops around it take it to {reached}, the tile has extent {extent} (shape "
            f"{tuple(int(s) if _ops.const_int(s) is not None else str(s) for s in shape)}); "
            "size the tile for the loop that indexes it, or guard the access with an if"
        )
    return None


def check_tile_bounds(body: Any) -> None:
    """Raise `KernelTypeError` for a tile access that certainly leaves its tile (module
    docstring).

    Raises:
        KernelTypeError: names the tile, the index, the value it reaches and the extent.
    """
    ranges = _iteration_ranges(body)
    if not ranges:
        return
    guarded = branch_conditions(body)
    anchors: set[int] = set()

    def visit_call(call: Any) -> None:
        # Tile operands (partial tiles read zeros and skip writes): not element accesses.
        if isinstance(call.op, tvm.ir.Op) and str(call.op.name) == "tl.region":
            anchors.update(int(arg.__chandle__()) for arg in call.args[:1])

    tvm_ffi.structural_walk(body, (tvm.ir.Call, visit_call), order="pre")
    problems: list[str] = []

    def check(access: Any, buffer: Any, indices: Any) -> None:
        handle = int(access.__chandle__())
        if handle in anchors or guarded.get(handle):
            return
        problem = _tile_problem(buffer, indices, ranges)
        if problem is not None:
            problems.append(problem)

    # The walks' callbacks run under TVM's FFI, which would wrap a raised error.
    tvm_ffi.structural_walk(
        body, (tvm.ir.TensorLoad, lambda load: check(load, load.source, load.indices))
    )
    tvm_ffi.structural_walk(
        body, (tirx.BufferStore, lambda store: check(store, store.buffer, store.indices))
    )
    if problems:
        raise KernelTypeError(problems[0])
