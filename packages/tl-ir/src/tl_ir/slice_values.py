"""The kernel builder's element store: a slice used as a value, and a Python int stored
into an integer element (a constant of the element's dtype, `tl_ir.constant_casts.stored_integer`).

A slice used as a value: ``b = A[0, 0:4]`` then ``A[0, 4:8] = b`` copies four elements.

In TileLang a slice read in an expression is a vector load (``A[0, 0:4]`` is the
4-lane load of ``A[0, 0]..A[0, 3]``), so storing it into a slice of the same length
copies the elements (TileLang's ``test_let_vectorize_load``). This TVM keeps such a
slice as a region (``TensorRegion``), which is what a tile operand is
(``T.copy(A[0:16, 0:16], S)``) and what a name bound to it must stay; but a region
stored into elements (``A[...] = region``) failed with TVM's "Expected ir.Expr but got
ir.TensorRegion". In a kernel parsed by `tl_ir.prim_func`, such a store takes the
region's elements as a vector load: every dim of extent 1 but at most one, whose
elements are the lanes. A region of more than one such dim is refused (a store writes
one element or one vector), and so is a store whose slice has another length.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.tirx.script import builder as _builder

from tl_ir.constant_casts import stored_integer
from tl_ir.element_operands import (
    check_indices,
    check_store_bounds,
    check_stored_value,
    listed,
)
from tl_ir.errors import KernelTypeError
from tl_ir.frontend import current_state
from tl_ir.language._operands import as_value
from tl_ir.ops import const_int

__all__ = ["install", "region_as_vector"]


def _name(buffer: Any) -> str:
    return str(getattr(buffer, "name", buffer))


def region_as_vector(region: Any) -> Any:
    """The vector load of ``region`` (a ``TensorRegion`` whose dims all have extent 1
    but at most one): its elements, in order, as lanes (a scalar load for one element).

    Raises:
        KernelTypeError: more than one dim has an extent other than 1, or that extent
            is not a constant.
    """
    indices: list[Any] = []
    lanes = 1
    for dim, extent_range in enumerate(region.region):
        extent = const_int(extent_range.extent)
        if extent == 1:
            indices.append(extent_range.min)
            continue
        if extent is None or lanes != 1:
            shape = [str(r.extent) for r in region.region]
            raise KernelTypeError(
                f"a slice of {_name(region.source)} used as a value must have one dim of "
                f"constant length (a vector) and extent 1 in the others, got extents "
                f"[{', '.join(shape)}] (dim {dim}); copy tiles with T.copy"
            )
        lanes = extent
        indices.append(tirx.Ramp(extent_range.min, tirx.const(1, extent_range.min.ty.dtype), lanes))
    return tirx.BufferLoad(region.source, indices)


def _slice_lanes(buffer: Any, indices: Any) -> int:
    """How many elements a store's indices address (slices as TVM's store reads them:
    a missing start is 0, a missing stop the dim's extent)."""
    lanes = 1
    for index, extent in zip(listed(indices), buffer.ty.shape, strict=False):
        if isinstance(index, slice):
            start = 0 if index.start is None else index.start
            stop = extent if index.stop is None else index.stop
            step = 1 if index.step is None else index.step
            count = const_int(tvm.sym.Analyzer().simplify((stop - start + step - 1) // step))
            lanes *= 0 if count is None else count
    return lanes


def _closed_slices(buffer: Any, indices: Any) -> Any:
    """The store's indices with each slice's missing start (0) and stop (the dim's
    extent) written out: TVM's store computed ``stop - start`` and failed on ``A[4:] =
    ...`` ("unsupported operand type(s) for -: 'NoneType' and 'int'")."""
    given = listed(indices)
    if not any(isinstance(index, slice) for index in given):
        return indices
    closed = []
    for index, extent in zip(given, buffer.ty.shape, strict=False):
        if isinstance(index, slice):
            start = 0 if index.start is None else index.start
            index = slice(start, extent if index.stop is None else index.stop, index.step)
        closed.append(index)
    return closed + given[len(closed) :]


def _broadcast_into_slice(buffer: Any, value: Any, indices: Any) -> Any:
    """A scalar stored into a slice (``A[0:4] = 1.0``, ``A[4:8] = x``) as the vector of
    that value, as numpy and TileLang's vector stores broadcast it (TVM refused it,
    "Incompatible types in BufferStore"); any other value unchanged."""
    if sum(isinstance(index, slice) for index in listed(indices)) != 1:
        return value
    dtype = str(buffer.ty.dtype)
    if isinstance(value, int | float) and not isinstance(value, bool):
        # (An int into an integer buffer is already a checked constant of its dtype.)
        scalar = as_value(value, dtype)
    elif tvm.ir.is_prim_expr(value) and tvm.DataType(str(value.ty.dtype)).lanes == 1:
        scalar = value if str(value.ty.dtype) == dtype else tirx.Cast(dtype, value)
    else:
        return value
    lanes = _slice_lanes(buffer, indices)
    return tirx.Broadcast(scalar, lanes) if lanes > 1 else value


def _check_operands(buffer: Any, value: Any, indices: Any) -> None:
    """Refuse ``None`` as a stored value or an index (TVM's builder crashed the
    process on it), a store into something that is not a buffer (``A.shape[0] =
    3``), and a value or index of the wrong kind (`tl_ir.element_operands`)."""
    if not isinstance(getattr(buffer, "ty", None), tirx.BufferType):
        raise KernelTypeError(
            f"cannot assign to an element of {buffer!r} ({type(buffer).__name__}): only "
            "a tensor, a tile or a T.alloc_var is assigned to"
        )
    if value is None:
        raise KernelTypeError(
            f"{_name(buffer)}[...] = None: expected a value of dtype {buffer.ty.dtype}"
        )
    for position, index in enumerate(listed(indices)):
        if index is None:
            raise KernelTypeError(
                f"{_name(buffer)}[...]: index {position} is None, expected an integer"
            )
    check_stored_value(buffer, value)
    check_indices(buffer, listed(indices))
    check_store_bounds(buffer, listed(indices))


def install() -> None:
    """Wrap the kernel builder's ``buffer_store`` (once per process; see the module)."""
    original = _builder.buffer_store
    if getattr(original, "_tl_slice_values", False):
        return

    def buffer_store(buffer: Any, value: Any, indices: Any) -> Any:
        if current_state() is not None:
            _check_operands(buffer, value, indices)
            indices = _closed_slices(buffer, indices)
        if type(value) is int and current_state() is not None:
            dtype = str(buffer.ty.dtype)
            if tvm.DataType(dtype).lanes == 1 and dtype.startswith(("int", "uint")):
                try:
                    value = stored_integer(value, dtype)
                except ValueError as exc:
                    raise KernelTypeError(f"{_name(buffer)}[...] = {exc}") from None
        if current_state() is not None:
            value = _broadcast_into_slice(buffer, value, indices)
        if isinstance(value, tvm.ir.TensorRegion) and current_state() is not None:
            # The vector load is made here, after the parser's span was given to the
            # region: it takes the statement's line (checked mode reports it).
            value = IRBuilder.current()._set_current_source_span(region_as_vector(value))
            value_lanes = int(tvm.DataType(str(value.ty.dtype)).lanes)
            lanes = _slice_lanes(buffer, indices)
            if lanes and lanes != value_lanes:
                raise KernelTypeError(
                    f"{_name(buffer)}[...] = a slice of {value_lanes} element(s): the "
                    f"target slice has {lanes} element(s); give both the same length"
                )
        return original(buffer, value, indices)

    buffer_store._tl_slice_values = True  # type: ignore[attr-defined]
    _builder.buffer_store = buffer_store
