"""Operand helpers shared by the language modules: shapes, scalar values, and tile
operands (a buffer, a region ``A[i:i+m, ...]`` or an element access ``A[i, j]``)."""

from __future__ import annotations

import builtins as _builtins
import linecache
import numbers
import sys
from collections.abc import Sequence
from typing import Any

import tvm
from tvm import tirx
from tvm.script import tirx as _tvm_T
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as _IB
from tvm.sym import Analyzer as _Analyzer

from tl_ir import ops as _ops
from tl_ir.bounds import index_problem
from tl_ir.dtypes import rounded_constant
from tl_ir.errors import KernelTypeError, ShapeMismatchError, TileLangError
from tl_ir.interpret_scalars import cast_value
from tl_ir.ops import Region
from tl_ir.printer import expr_text

#: TVMScript's wrapper of a scalar variable read (``T.alloc_var``).
scalar_wrapper = _tvm_T.scalar_wrapper


def expr_dtype(expr: Any) -> str:
    dtype = getattr(expr, "dtype", None)
    if dtype is None:
        dtype = getattr(getattr(expr, "ty", None), "dtype", "")
    return str(dtype)


def check_shape(shape: Any, where: str, *, allow_zero: bool = False) -> tuple[Any, ...]:
    """The dims of ``shape`` (a dim or a sequence of dims), each an int or an integer
    expression, a constant one positive (or zero when ``allow_zero``: a tensor parameter
    may be empty, as in TileLang) and at most 2**31 - 1.

    Raises:
        KernelTypeError: an empty shape, a dim of another type, or a constant dim out of range.
    """
    dims = tuple(
        _ops.exact_int(d) for d in (shape if isinstance(shape, list | tuple) else (shape,))
    )
    if not dims:
        raise KernelTypeError(f"{where}: expected a non-empty shape, got {shape!r}")
    for dim in dims:
        ok = (isinstance(dim, int) and not isinstance(dim, _builtins.bool)) or (
            tvm.ir.is_prim_expr(dim) and "int" in expr_dtype(dim)
        )
        if not ok:
            raise KernelTypeError(
                f"{where}: expected every dim to be an int or an integer expression, "
                f"got {dim!r} ({type(dim).__name__}) in shape {shape!r}"
            )
        value = _ops.const_int(dim)
        if value is not None and (value < 0 or (value == 0 and not allow_zero)):
            expected = "non-negative" if allow_zero else "positive"
            raise KernelTypeError(f"{where}: expected {expected} dims, got {value} in {shape!r}")
        if value is not None and value > _INT32_MAX:
            raise KernelTypeError(
                f"{where}: expected dims of at most 2**31 - 1 (a constant size is a 32-bit "
                f"integer in the kernel), got {value} in {shape!r}; kernels index with 32-bit "
                "integers (an int64 symbolic dim too): split the work into arrays of fewer "
                "than 2**31 elements"
            )
    return dims


_INT32_MAX = 2**31 - 1


def locate_at_caller(err: TileLangError, depth: int) -> None:
    frame = sys._getframe(depth)
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    err.locate(filename, lineno, linecache.getline(filename, lineno) or None)


def as_value(value: Any, dtype: str) -> Any:
    if isinstance(value, scalar_wrapper):
        value = value.scalar
    value = _ops.exact_int(value)
    if isinstance(value, float | _builtins.bool | int) and ("int" in dtype or dtype == "bool"):
        # Converted as T.cast converts: an int wraps, a float truncates and saturates
        # (NaN gives 0), a bool is truthiness (TVM refused an out-of-range literal).
        return tirx.const(cast_value(value, dtype), dtype)
    if isinstance(value, float):
        return tirx.const(rounded_constant(value, dtype), dtype)
    if isinstance(value, _builtins.bool | int):
        return tirx.const(value, dtype)
    if not tvm.ir.is_prim_expr(value):
        raise KernelTypeError(f"expected a scalar value or expression, got {value!r}")
    if expr_dtype(value) != dtype:
        return tirx.Cast(dtype, value)
    return value


def describe_operand(value: Any) -> str:
    """What ``value`` is, for an error message: a tile or tensor by name, scope, shape
    and dtype (it is not an element), an expression with its dtype, anything else by
    type and repr (at most 200 characters)."""
    ty = getattr(value, "ty", None)
    if isinstance(ty, tirx.BufferType):
        scope = str(ty.storage_scope or "global")
        what = "tensor" if scope == "global" else f"{scope} tile"
        return f"the {what} {value.name} (shape {fmt_shape(ty.shape)}, {ty.dtype})"
    if tvm.ir.is_prim_expr(value):
        return f"the {expr_dtype(value)} expression {expr_text(value)}"[:200]
    if isinstance(value, numbers.Real):
        return f"{type(value).__name__} {value!r}"
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, tvm.ir.Node):
        kind = f"{type(value).__module__.split('.')[0]}.{type(value).__name__}"
        return f"a {kind} of shape {tuple(shape)}"
    return f"{type(value).__name__} {value!r}"[:200]


def fmt_shape(shape: Sequence[Any]) -> str:
    """A shape as Python writes a tuple: ``(8,)``, ``(4, 4)``."""
    return str(
        tuple(
            _ops.const_int(extent) if _ops.const_int(extent) is not None else extent
            for extent in shape
        )
    ).replace("'", "")


def scalar_operand_problem(value: Any) -> str | None:
    """None when ``value`` can be an operand of a scalar expression (a real Python or
    numpy number, a bool, a primitive expression, a slice read as a
    vector, a ``T.alloc_var`` read); otherwise what it is (`describe_operand`; ``"None"``
    for None)."""
    if value is None:
        return "None"
    if isinstance(value, scalar_wrapper | tvm.ir.TensorRegion) or tvm.ir.is_prim_expr(value):
        return None
    if hasattr(value, "asobject"):  # `a == b`, `a != b`: a comparison made on demand
        return scalar_operand_problem(value.asobject())
    if isinstance(value, numbers.Real):
        return None
    return describe_operand(value)


class Element:
    """An element access ``A[i, j]`` used as a tile operand: the anchor of a tile."""

    def __init__(self, buffer: Any, indices: Sequence[Any]) -> None:
        self.buffer = buffer
        self.indices = tuple(indices)


def _element_indices(buffer: Any, indices: Any, where: str) -> list[Any]:
    """The constant indices of an atomic's element operand (``B[-1]``) counted from the
    end when negative, as element accesses count them; a constant index outside
    ``[-extent, extent)`` is refused (an atomic on it was silently dropped). A tile
    op's anchor is not an element: below zero it is a partial tile."""
    shape = list(buffer.ty.shape)
    checked = []
    for dim, index in enumerate(indices):
        value = _ops.const_int(index)
        extent = _ops.const_int(shape[dim]) if dim < len(shape) else None
        if value is not None and extent is not None:
            problem = index_problem(buffer, dim, value, value, f"constant index {value}")
            if problem is not None:
                raise KernelTypeError(f"{where}: {problem}")
            if value < 0:
                index = tirx.IntImm(str(index.ty.dtype), value + extent)
        checked.append(index)
    return checked


def tile_operand(value: Any, where: str, access: int) -> Region | Element:
    if isinstance(value, scalar_wrapper):
        value = value.scalar
    if _ops.is_buffer(value):
        shape = tuple(value.ty.shape)
        zeros = tuple(tirx.IntImm("int32", 0) for _ in shape)
        return Region(value, zeros, shape, access)
    if isinstance(value, tvm.ir.TensorRegion):
        ranges = list(value.region)
        return Region(
            value.source,
            tuple(r.min for r in ranges),
            tuple(r.extent for r in ranges),
            access,
        )
    if isinstance(value, tvm.ir.TensorLoad):
        return Element(value.source, list(value.indices))
    raise KernelTypeError(
        f"{where}: expected a buffer, a region A[i:i+m, ...] or an element access A[i, j]; "
        f"got {describe_operand(value)}"
    )


def anchor(element: Element, extents: Sequence[Any], access: int, where: str) -> Region:
    rank = len(element.indices)
    extents = list(extents)
    while len(extents) > rank and _ops.const_int(extents[0]) == 1:
        extents.pop(0)
    if len(extents) > rank:
        raise ShapeMismatchError(
            f"{where}: the element access {element.buffer.name}[...] has {rank} index(es) "
            f"but the other operand's tile has {len(extents)} non-unit dims "
            f"{fmt_extents(extents)}; they cannot match"
        )
    full = [tirx.IntImm("int32", 1)] * (rank - len(extents)) + extents
    return Region(element.buffer, element.indices, tuple(full), access)


def fmt_extents(extents: Sequence[Any]) -> str:
    return "(" + ", ".join(str(e) for e in extents) + ")"


def provably_different(a: Any, b: Any) -> bool:
    ca, cb = _ops.const_int(a), _ops.const_int(b)
    if ca is not None and cb is not None:
        return ca != cb
    diff = _ops.const_int(_Analyzer().simplify(a - b))
    return diff is not None and diff != 0


def check_same_tile(src: Region, dst: Region, where: str) -> None:
    s = [e for e in src.extents if _ops.const_int(e) != 1]
    d = [e for e in dst.extents if _ops.const_int(e) != 1]
    all_const = all(_ops.const_int(e) is not None for e in (*s, *d))
    mismatch = (len(s) != len(d) and all_const) or (
        len(s) == len(d) and any(provably_different(a, b) for a, b in zip(s, d, strict=False))
    )
    if mismatch:
        raise ShapeMismatchError(
            f"{where}: tile shapes cannot match: source {src.buffer.name} tile is "
            f"{fmt_extents(src.extents)}, destination {dst.buffer.name} tile is {fmt_extents(dst.extents)}; "
            "expected the same extents (unit dims aside)"
        )


def region_of(value: Any, where: str, access: int) -> Region:
    operand = tile_operand(value, where, access)
    if isinstance(operand, Element):
        return Region(
            operand.buffer,
            operand.indices,
            tuple(tirx.IntImm("int32", 1) for _ in operand.indices),
            access,
        )
    return operand


def element_region_of(value: Any, where: str, access: int) -> Region:
    """`region_of` for an atomic's operand: an element access's constant indices as
    `_element_indices` gives them."""
    operand = tile_operand(value, where, access)
    if isinstance(operand, Element):
        indices = _element_indices(operand.buffer, operand.indices, where)
        ones = tuple(tirx.IntImm("int32", 1) for _ in indices)
        return Region(operand.buffer, tuple(indices), ones, access)
    return operand


def tile_of(value: Any, where: str, access: int) -> Region:
    operand = tile_operand(value, where, access)
    if isinstance(operand, Element):
        raise KernelTypeError(
            f"{where}: expected a whole tile (a buffer or a region A[i:i+m, ...]), got the "
            f"element access {operand.buffer.name}[...]"
        )
    return operand


def is_tile_operand(value: Any) -> bool:
    return _ops.is_buffer(value) or isinstance(value, tvm.ir.TensorRegion)


def emit_tile_op(name: str, *operands: Any) -> Any:
    """Build the ``tl.*`` call ``name(*operands)`` and, inside a kernel being built,
    append it to the kernel as a statement (returning None), as TileLang's tile ops do:
    a tile op issued from a plain Python helper called in the kernel body is kept.
    Outside a kernel build the call is returned."""
    call = _ops.make_call(name, *operands)
    if IRBuilder.is_in_scope():
        _IB.evaluate(call)
        return None
    return call
