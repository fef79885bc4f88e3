"""The operands of an element access in a kernel, checked where the kernel names them.

``A[i] = v`` and ``A[i]`` in an expression reached TVM's builders with whatever Python
value the kernel wrote, and TVM answered with its own signature text ("Mismatched
type on argument #1 when calling `script.ir_builder.tirx.BufferStore(...)`") or a
C++ check ("BufferVar A is 1-dimensional, cannot be indexed with the 2-dimensional
indices provided"). In a kernel parsed by `tl_ir.prim_func` these are refused with a
`KernelTypeError` naming the buffer, the position, what is expected and what came:

* a stored value that is not a scalar: a tile (``A[0] = S``), a string, a list or
  tuple, a dict, a complex number, a numpy array;
* a float constant an integer element cannot hold (NaN or an infinity; a finite
  float is truncated, as TVM converts it);
* an index that is not an integer, a slice or a kernel expression: a string, a tile,
  ``...``, ``None``;
* a count of indices other than the buffer's dims;
* a scalar indexed or unpacked (``with T.Kernel(2) as (bx, by)``: TVM said "Type
  ir.PrimType does not support subscript").

A store's constant index (or slice) outside its buffer is refused here too, at the
statement's line (`check_store_bounds`); `tl_ir.bounds` checks every access again once
the kernel is built, reads among them (a read may be a tile op's anchor, which may lie
outside: a partial tile), and refuses a float index with its dim.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import tvm
from tvm import tirx

from tl_ir.bounds import index_problem
from tl_ir.errors import KernelTypeError
from tl_ir.frontend import current_state
from tl_ir.language._operands import (
    describe_operand,
    fmt_shape,
    scalar_operand_problem,
    scalar_wrapper,
)
from tl_ir.ops import const_int

__all__ = ["check_indices", "check_store_bounds", "check_stored_value", "install", "listed"]


def _name(buffer: Any) -> str:
    return str(getattr(buffer, "name", buffer))


def _index_problem(index: Any) -> str | None:
    if index is None:
        return "None"
    if isinstance(index, slice | scalar_wrapper | numbers.Real) or tvm.ir.is_prim_expr(index):
        return None
    if index is Ellipsis:
        return "... (Ellipsis); a kernel names every dim: A[i, j], or A[0:n, :] for a slice"
    return describe_operand(index)


def check_indices(buffer: Any, indices: list[Any]) -> None:
    """Refuse an index of ``buffer`` that is not an integer, a slice or a kernel
    expression, and a count of indices other than its dims.

    Raises:
        KernelTypeError: names the buffer, the index's position and what came.
    """
    name = _name(buffer)
    for position, index in enumerate(indices):
        problem = _index_problem(index)
        if problem is not None:
            raise KernelTypeError(
                f"{name}[...]: index {position} must be an integer, a slice or an integer "
                f"expression, got {problem}"
            )
    dims = len(buffer.ty.shape)
    # A region may leave out trailing dims (they are taken whole); an element may not.
    region = any(isinstance(index, slice) for index in indices)
    if len(indices) > dims or (len(indices) < dims and not region):
        raise KernelTypeError(
            f"{name}[...]: {name} has {dims} dim(s) (shape {fmt_shape(buffer.ty.shape)}), indexed with "
            f"{len(indices)} index(es); give one index or slice per dim"
        )


def _constant_span(index: Any, extent: int | None) -> tuple[int, int, str] | None:
    """The first and last constant index a store's index addresses and how to name
    it, or None when they are not constants."""
    value = const_int(index) if not isinstance(index, slice) else None
    if value is not None:
        return value, value, f"constant index {value}"
    if isinstance(index, tirx.Ramp):
        base, stride, lanes = (const_int(v) for v in (index.base, index.stride, index.lanes))
        if base is None or stride is None or lanes is None:
            return None
        first, last = sorted((base, base + stride * (lanes - 1)))
        return first, last, f"the {lanes} lanes from {base} by {stride} (a slice or T.Ramp)"
    if not isinstance(index, slice):
        return None
    start = 0 if index.start is None else const_int(index.start)
    stop = extent if index.stop is None else const_int(index.stop)
    step = 1 if index.step is None else const_int(index.step)
    if start is None or stop is None or step is None or step == 0:
        return None
    count = max(0, -(-(stop - start) // step))
    if count == 0:
        return None
    last = start + step * (count - 1)
    return min(start, last), max(start, last), f"the slice {start}:{stop} ({count} elements)"


def check_store_bounds(buffer: Any, indices: list[Any]) -> None:
    """Refuse a store at a constant index (or a slice of constant bounds) outside
    ``[-extent, extent)`` of its dim, here where the parser knows the statement's line
    (`tl_ir.bounds` checks every access again once the kernel is built).

    Raises:
        KernelTypeError: names the buffer, the dim, the allowed range and the index.
    """
    for dim, (index, extent) in enumerate(zip(indices, buffer.ty.shape, strict=False)):
        span = _constant_span(index, const_int(extent))
        if span is not None:
            problem = index_problem(buffer, dim, *span)
            if problem is not None:
                raise KernelTypeError(problem)


def check_stored_value(buffer: Any, value: Any) -> None:
    """Refuse a value stored into an element of ``buffer`` that is not a scalar, and a
    NaN or infinite float constant stored into an integer element.

    Raises:
        KernelTypeError: names the buffer, its dtype and what came.
    """
    name, dtype = _name(buffer), str(buffer.ty.dtype)
    problem = scalar_operand_problem(value)
    if problem is not None:
        hint = ""
        if isinstance(getattr(value, "ty", None), tirx.BufferType):
            hint = f"; copy a tile with T.copy, or store one element of it ({value.name}[i])"
        raise KernelTypeError(
            f"{name}[...] = value: expected a scalar value or expression of {name}'s dtype "
            f"{dtype}, got {problem}{hint}"
        )
    if isinstance(value, float) and not math.isfinite(value) and dtype.startswith(("int", "uint")):
        raise KernelTypeError(
            f"{name}[...] = {value}: an integer element ({dtype}) cannot hold {value}; "
            f"T.cast(x, {dtype!r}) converts a float as the GPUs do (NaN gives 0, an "
            "infinity the nearest limit)"
        )


def listed(indices: Any) -> list[Any]:
    """Indices as a list (a subscript or the store builder passes one index bare)."""
    return list(indices) if isinstance(indices, list | tuple | tvm.ir.Array) else [indices]


def install() -> None:
    """Check the indices of an element read ``A[...]`` in a kernel being parsed by
    `tl_ir.prim_func` (once per process); elsewhere TVM's subscript is unchanged."""
    original = tvm.ir.Expr.__getitem__
    if getattr(original, "_tl_element_operands", False):
        return

    def getitem(self: Any, index: Any) -> Any:
        if current_state() is not None:
            if isinstance(getattr(self, "ty", None), tirx.BufferType):
                check_indices(self, listed(index))
            elif tvm.ir.is_prim_expr(self):
                raise KernelTypeError(
                    f"{describe_operand(self)} is a scalar: it cannot be indexed or "
                    "unpacked (a T.Kernel with one grid extent binds one name, `as bx`; "
                    "`as (bx, by)` needs two extents)"
                )
        return original(self, index)

    getitem._tl_element_operands = True  # type: ignore[attr-defined]
    tvm.ir.Expr.__getitem__ = getitem
