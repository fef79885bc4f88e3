"""Scalar helpers (clamp, cast), ``T.print`` and the layout/schedule hints."""

from __future__ import annotations

import builtins as _builtins
from typing import Any

import tvm
from tvm import tirx
from tvm.script import tirx as _tvm_T
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir.constant_casts import constant_cast as _constant_cast
from tl_ir.dtypes import normalize_dtype as _normalize_dtype
from tl_ir.errors import KernelTypeError, ScopeError, UnsupportedError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._operands import (
    describe_operand,
    emit_tile_op,
    is_tile_operand,
    scalar_operand_problem,
    scalar_wrapper,
    tile_of,
)
from tl_ir.layout import IndexLayout, MemoryLayout, check_index_map_rank

__all__ = [
    "annotate_layout",
    "cast",
    "clamp",
    "dp4a",
    "infinity",
    "let",
    "max_value",
    "min_value",
    "print",
    "round",
    "use_swizzle",
]


def _check_scalar(value: Any, where: str) -> None:
    problem = scalar_operand_problem(value)
    if problem is not None:
        raise KernelTypeError(f"{where} must be a scalar value or expression, got {problem}")


def clamp(dst: Any, min_val: Any, max_val: Any) -> Any:
    """``min(max(dst, min_val), max_val)`` (TileLang's parameter names).

    Raises:
        KernelTypeError: an operand is not a scalar value or expression.
    """
    for value, name in ((dst, "dst"), (min_val, "min_val"), (max_val, "max_val")):
        _check_scalar(value, f"T.clamp(dst, min_val, max_val): {name}")
    return _tvm_T.min(_tvm_T.max(dst, min_val), max_val)


def _dp4a_operand(value: Any, name: str, dtype: str) -> tuple[Any, list[Any]]:
    """The buffer and first element index of a `dp4a` operand (a buffer or an element
    access), checked to be of ``dtype``."""
    if isinstance(value, scalar_wrapper):
        value = value.scalar
    if _ops.is_buffer(value):
        buffer, index = value, [tirx.IntImm("int32", 0) for _ in value.ty.shape]
    elif isinstance(value, tvm.ir.TensorLoad):
        buffer, index = value.source, list(value.indices)
    else:
        raise KernelTypeError(
            f"T.dp4a(A, B, C): expected {name} to be a buffer or an element access "
            f"A[i], got {describe_operand(value)}"
        )
    if str(buffer.ty.dtype) != dtype:
        raise KernelTypeError(
            f"T.dp4a(A, B, C): expected {name} to be {dtype}, got {buffer.name} of "
            f"{buffer.ty.dtype}"
        )
    return buffer, index


def dp4a(A: Any, B: Any, C: Any) -> None:
    """``C[c] += A[a] * B[b] + ... + A[a + 3] * B[b + 3]``: the four-element dot
    product of int8 values accumulated into an int32 (TileLang's ``T.dp4a``; CUDA's
    ``__dp4a``). Each operand is a buffer (its first element) or an element access;
    the four elements are consecutive in the last dim.

    Raises:
        KernelTypeError: an operand that is no buffer or element, A or B not int8, C
            not int32.
    """
    a, a_index = _dp4a_operand(A, "A", "int8")
    b, b_index = _dp4a_operand(B, "B", "int8")
    c, c_index = _dp4a_operand(C, "C", "int32")
    total = tirx.BufferLoad(c, c_index)
    for k in range(4):
        a_k = [*a_index[:-1], a_index[-1] + k]
        b_k = [*b_index[:-1], b_index[-1] + k]
        product = tirx.Cast("int32", tirx.BufferLoad(a, a_k)) * tirx.Cast(
            "int32", tirx.BufferLoad(b, b_k)
        )
        total = total + product
    _IB.buffer_store(c, total, c_index)


_ROUNDING_MODES = ("ties-to-even", "ties-away-from-zero")


def round(x: Any, rounding_mode: str | None = "ties-to-even", span: Any = None) -> Any:
    """``x`` rounded to the nearest integer (as a float): ties to even (the default,
    TVM's and TileLang's ``round``) or, with ``rounding_mode="ties-away-from-zero"``,
    away from zero (C's ``round``: ``T.round(2.5, ...)`` is 3, ``-2.5`` gives -3).

    Raises:
        KernelTypeError: another rounding mode.
    """
    if rounding_mode is None:
        rounding_mode = "ties-to-even"
    if rounding_mode not in _ROUNDING_MODES:
        raise KernelTypeError(
            f"T.round(x, rounding_mode): expected rounding_mode to be one of "
            f"{list(_ROUNDING_MODES)}, got {rounding_mode!r}"
        )
    if rounding_mode == "ties-to-even":
        return _tvm_T.round(x)
    value = tirx.const(x, "float32") if isinstance(x, int | float) else x
    given = str(value.dtype)
    # A 16-bit float is rounded in float32 (exact) and narrowed back (exact: the
    # result is an integer its type holds): in its own type, the unchosen branch
    # trunc(x) + 1 of a constant at the type's maximum folded past it (a TVM error).
    narrow = given.startswith(("float16", "bfloat16"))
    dtype = given.replace("bfloat16", "float32").replace("float16", "float32") if narrow else given
    if narrow:
        value = tirx.Cast(dtype, value)
    whole = _tvm_T.trunc(value)
    # x - trunc(x) is exact, so the tie test is too (|x| + 0.5 would round first).
    one, half = tirx.const(1.0, dtype), tirx.const(0.5, dtype)
    away = whole + _tvm_T.if_then_else(value < tirx.const(0.0, dtype), -one, one)
    rounded = _tvm_T.if_then_else(_tvm_T.abs(value - whole) >= half, away, whole)
    return tirx.Cast(given, rounded) if narrow else rounded


def cast(value: Any, dtype: Any) -> Any:
    """``value`` converted to ``dtype``; a constant is converted now, as every target
    converts a value (`tl_ir.constant_casts`: integers wrap, floats saturate to an
    integer type, beyond a float type's range is infinity).

    Raises:
        KernelTypeError: ``value`` is not a scalar value or expression.
    """
    _check_scalar(value, "T.cast(value, dtype): value")
    return _constant_cast(value, _normalize_dtype(dtype))


def infinity(dtype: Any) -> Any:
    """Positive infinity of the float ``dtype`` (a name or a dtype object)."""
    return _tvm_T.infinity(_normalize_dtype(dtype))


def max_value(dtype: Any) -> Any:
    """The largest finite value of ``dtype`` (a name or a dtype object)."""
    return _tvm_T.max_value(_normalize_dtype(dtype))


def min_value(dtype: Any) -> Any:
    """The smallest finite value of ``dtype`` (a name or a dtype object)."""
    return _tvm_T.min_value(_normalize_dtype(dtype))


def print(value: Any = None, msg: str = "", warp_group_id: int = 0, warp_id: int = 0) -> Any:
    """Print ``value`` (a scalar expression or a tile) prefixed by ``msg`` when the kernel
    runs (on the CPU, to stdout); without a value, ``msg`` alone (TileLang's
    ``T.print(msg="...")``). ``warp_group_id``/``warp_id`` (which GPU warp prints a
    tile, in TileLang) are checked and change nothing on the CPU, where a tile is
    printed once."""
    if not isinstance(msg, str):
        raise KernelTypeError(f"T.print(value, msg): expected msg to be a str, got {msg!r}")
    for name, index in (("warp_group_id", warp_group_id), ("warp_id", warp_id)):
        if isinstance(index, _builtins.bool) or not isinstance(index, int) or index < 0:
            raise KernelTypeError(f"T.print({name}=...): expected an int >= 0, got {index!r}")
    operand: Any
    if value is None:
        if not msg:
            raise KernelTypeError("T.print(): expected a value to print or a msg, got neither")
        operand = tvm.ir.StringImm("")  # the message alone
    elif is_tile_operand(value):
        operand = tile_of(value, "T.print(value)", _ops.ACCESS_READ)
    else:
        if isinstance(value, scalar_wrapper):
            value = value.scalar
        if not tvm.ir.is_prim_expr(value):
            raise KernelTypeError(
                f"T.print(value): expected an expression or a tile, got {describe_operand(value)}"
            )
        operand = value
    return emit_tile_op("tl.print", operand, tvm.ir.StringImm(msg))


def annotate_layout(layout_map: dict[Any, Any]) -> None:
    """Hint the layout of tiles: ``{buffer: layout}`` where ``layout`` is a function
    from indices to indices (or a ``tirx.IndexMap``). Recorded in the function attribute
    ``tl.layout_map``; targets without layouts ignore it. A ``T.Layout(shape, fn)``
    (`tl_ir.layout.IndexLayout`) is recorded the same way on shared and global buffers
    (a hint: their memory keeps the row-major order) and refused on fragments
    (`UnsupportedError`). A `tl_ir.layout.MemoryLayout`
    (``make_swizzled_layout(buffer)``...) is recorded by kind in ``tl.shared_layouts``
    (buffer name -> kind) for GPU targets that swizzle shared tiles."""
    if not isinstance(layout_map, dict):
        raise KernelTypeError(
            f"T.annotate_layout: expected a dict {{buffer: layout}}, got {layout_map!r}"
        )
    state = _current_state()
    if state is None:
        raise ScopeError("T.annotate_layout is only allowed inside a @T.prim_func body")
    for buffer, layout in layout_map.items():
        if not _ops.is_buffer(buffer):
            raise KernelTypeError(f"T.annotate_layout: expected buffer keys, got {buffer!r}")
        if isinstance(layout, MemoryLayout):
            # A shared-memory arrangement never changes values: recorded for the targets
            # that arrange shared tiles (docs/gpu.md), ignored by the others.
            state.shared_layouts[str(buffer.name)] = layout.kind
            continue
        if isinstance(layout, IndexLayout):
            layout = _index_layout_map(buffer, layout)
        elif callable(layout) and not isinstance(layout, tirx.IndexMap):
            layout = tirx.IndexMap.from_func(layout, ndim=len(buffer.ty.shape))
        elif not isinstance(layout, tirx.IndexMap):
            raise KernelTypeError(
                f"T.annotate_layout: expected a layout function or tirx.IndexMap, got {layout!r}"
            )
        check_index_map_rank(buffer, layout)
        state.layout_map[str(buffer.name)] = layout


def _index_layout_map(buffer: Any, layout: IndexLayout) -> Any:
    """The ``tirx.IndexMap`` of a ``T.Layout`` annotated on ``buffer`` (a shared or
    global buffer, where it is a hint that keeps the row-major order)."""
    from tl_ir.scopes import is_fragment

    name = str(buffer.name)
    if is_fragment(buffer):
        raise UnsupportedError(
            f"T.annotate_layout({{{name}: T.Layout(...)}}): a T.Layout says where a tile's "
            "elements sit in memory, and a fragment has no memory order; write its "
            f"placement over threads as T.annotate_layout({{{name}: lambda i, j: (thread, "
            "local_index)}), or leave the fragment's layout to the target"
        )
    shape = [int(d) if isinstance(d, tirx.IntImm) else d for d in buffer.ty.shape]
    expected = layout.get_input_shape()
    static = all(isinstance(d, int) for d in shape + expected)
    if len(shape) != len(expected) or (static and shape != expected):
        raise KernelTypeError(
            f"T.annotate_layout: the layout of {name} is made for shape {expected}, but "
            f"{name} has shape {shape}"
        )
    return layout.index_map


def use_swizzle(panel_size: int, order: str = "row", enable: bool = True) -> None:
    """Hint a swizzled (panel-major) block order with panels of ``panel_size`` blocks.
    Recorded in the function attribute ``tl.swizzle_panel``; a no-op where unused."""
    panel_size = _ops.exact_int(panel_size)
    if isinstance(panel_size, _builtins.bool) or not isinstance(panel_size, int) or panel_size <= 0:
        raise KernelTypeError(
            f"T.use_swizzle(panel_size): expected a positive int, got {panel_size!r}"
        )
    if order not in ("row", "column"):
        raise KernelTypeError(f"T.use_swizzle(order): expected 'row' or 'column', got {order!r}")
    state = _current_state()
    if state is None:
        raise ScopeError("T.use_swizzle is only allowed inside a @T.prim_func body")
    if enable:
        state.swizzle_panel = panel_size


def import_source(source: str | None = None) -> None:
    """TileLang's ``T.import_source(code)``: device source (CUDA C device helpers, say)
    that the kernel's ``T.call_extern`` calls reach. The text is recorded on the kernel
    (`tl_ir.frontend.IMPORTED_SOURCE_ATTR`, each distinct text once, in order); a backend
    whose descriptor names an imported-source language (``Backend.imported_source_language``:
    CUDA C on ``cuda``) places it before the kernels, every other backend refuses the
    kernel with an `UnsupportedError` when it is lowered. ``T.import_source(None)``
    (TileLang's no-op) does nothing.

    Raises:
        KernelTypeError: ``source`` is neither None nor a string.
        ScopeError: called outside a ``@T.prim_func`` body.
    """
    if source is None:
        return
    if not isinstance(source, str):
        raise KernelTypeError(
            f"T.import_source(source): expected a string of device source or None, got "
            f"{type(source).__name__}"
        )
    state = _current_state()
    if state is None:
        raise ScopeError("T.import_source is only allowed inside a @T.prim_func body")
    if source not in state.imported_sources:
        state.imported_sources.append(source)


def access_ptr(base: Any, access_type: str = "r", *, offset: Any = 0, extent: Any = None) -> Any:
    """TileLang's ``T.access_ptr(tile, "r"|"w"|"rw")``: the address of a tile (a buffer, or
    the element a subscript names) as a ``handle``, for passing to a ``T.call_extern``
    device helper (``T.import_source``). ``offset`` (elements) moves the start,
    ``extent`` (elements, default: to the end of the tile) bounds the access.

    Raises:
        KernelTypeError: ``base`` is not a tile or a subscript of one, or ``access_type``
            is not ``"r"``, ``"w"`` or ``"rw"``.
    """
    if access_type not in ("r", "w", "rw"):
        raise KernelTypeError(
            f"T.access_ptr(access_type): expected 'r', 'w' or 'rw', got {access_type!r}"
        )
    if isinstance(base, scalar_wrapper):
        base = base.scalar
    if _ops.is_buffer(base):
        return base.access_ptr(access_type, offset=offset, extent=extent)
    if isinstance(base, tvm.ir.TensorLoad):
        (element,) = base.source.offset_of(list(base.indices))
        return base.source.access_ptr(access_type, offset=element + offset, extent=extent)
    raise KernelTypeError(
        f"T.access_ptr(base): expected a tile or a subscript of one, got {describe_operand(base)}"
    )


def reinterpret(
    first: Any = None, second: Any = None, *, dtype: Any = None, value: Any = None
) -> Any:
    """The bits of a value read as another dtype: ``T.reinterpret(dtype, value)`` (TVM's
    order), ``T.reinterpret(value, dtype)`` (TileLang's) or with keywords
    (``T.reinterpret(value, dtype="handle")``); the dtype is whichever positional
    argument is a dtype name or object.

    Raises:
        KernelTypeError: no dtype and value can be told apart.
    """
    positional = [a for a in (first, second) if a is not None]
    if dtype is not None:
        positional.append(dtype)
    if value is not None:
        positional.insert(0, value)
    dtypes = [a for a in positional if isinstance(a, str)]
    values = [a for a in positional if not isinstance(a, str)]
    if len(dtypes) != 1 or len(values) != 1:
        raise KernelTypeError(
            "T.reinterpret: expected one dtype and one value ((dtype, value) or "
            f"(value, dtype)), got {', '.join(repr(a) for a in positional)}"
        )
    name = dtypes[0] if dtypes[0] == "handle" else _normalize_dtype(dtypes[0])
    source = values[0]
    if (
        tvm.ir.is_prim_expr(source)
        and name != "handle"
        and "float4" not in name + str(source.ty.dtype)
    ):
        have, want = tvm.DataType(str(source.ty.dtype)), tvm.DataType(name)
        if have.bits * have.lanes != want.bits * want.lanes:
            raise KernelTypeError(
                f"T.reinterpret: the value and the dtype must have the same bits, got "
                f"{describe_operand(source)} ({have.bits * have.lanes} bits) as {name} "
                f"({want.bits * want.lanes} bits)"
            )
    return _tvm_T.reinterpret(name, source)


class _Let(_IB.LetAnnotation):  # type: ignore[misc]
    """``T.let``: TileLang's call forms on top of the annotation form.

    ``x: T.let = value`` (or ``T.let[T.int32]``) binds a new name, as TVMScript has it;
    ``T.let(v, value)`` binds the variable ``v`` (made by ``v = T.int32()``) to ``value``
    for the rest of the enclosing block; ``T.let(v, value, body)`` is the expression
    ``body`` with ``v`` bound to ``value``.
    """

    def __call__(self, v: Any, value: Any, body: Any = None) -> Any:
        if not isinstance(v, tirx.Var):
            raise KernelTypeError(
                "T.let(v, value): expected v to be a variable made by v = T.int32() (or "
                f"another dtype), got {type(v).__name__}"
            )
        value = tirx.const(value, v.dtype) if isinstance(value, int | float) else value
        if not isinstance(value, tirx.PrimExpr) or value.dtype != v.dtype:
            raise KernelTypeError(
                f"T.let(v, value): expected a {v.dtype} value for variable {v.name!r}, got "
                f"{value!r}"
            )
        if body is not None:
            return tirx.Let(v, value, body)
        _IB.Bind(value, var=v)
        return None


let = _Let()
