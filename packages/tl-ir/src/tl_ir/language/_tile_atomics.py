"""Tile and element atomics (``T.atomic_add/max/min``, ``T.atomic_addx2/x4``), each a
``tl.atomic_*`` call described by `tl_ir.ops` (or a fetching atomic expression)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tvm import tirx
from tvm.script.ir_builder import IRBuilder

from tl_ir import ops as _ops
from tl_ir.errors import ShapeMismatchError, UnsupportedError
from tl_ir.language._fetching_atomics import fetching_atomic
from tl_ir.language._hints import (
    MEMORY_ORDERS,
    check_choice,
    check_flag,
    check_hint_types,
)
from tl_ir.language._loops import Parallel
from tl_ir.language._operands import (
    Element,
    anchor,
    as_value,
    check_same_tile,
    element_region_of,
    emit_tile_op,
    fmt_extents,
    is_tile_operand,
    tile_of,
    tile_operand,
)
from tl_ir.ops import Region

__all__ = ["atomic_add", "atomic_addx2", "atomic_addx4", "atomic_max", "atomic_min"]


def _atomic(kind: str) -> Callable[..., Any]:
    def atomic(
        dst: Any,
        value: Any,
        memory_order: str | None = None,
        return_prev: bool = False,
        use_tma: bool = False,
        annotations: dict[str, Any] | None = None,
    ) -> Any:
        where = f"T.atomic_{kind}(dst, value)"
        check_choice(memory_order, MEMORY_ORDERS, f"T.atomic_{kind}(memory_order=...)")
        fetch = check_flag(return_prev, f"T.atomic_{kind}(return_prev=...)")
        check_flag(use_tma, f"T.atomic_{kind}(use_tma=...)")
        check_hint_types(None, annotations)
        if fetch and is_tile_operand(value):
            raise UnsupportedError(
                f"T.atomic_{kind}(return_prev=True): only a scalar update of one element "
                "returns its previous value (as in TileLang); a tile value updates a tile. "
                f"Write T.atomic_{kind}(dst[i], value[i], return_prev=True) per element"
            )
        if is_tile_operand(value):
            v = tile_of(value, f"{where}: value", _ops.ACCESS_READ)
            d_op = tile_operand(dst, f"{where}: dst", _ops.ACCESS_READ_WRITE)
            d = (
                anchor(d_op, v.extents, _ops.ACCESS_READ_WRITE, where)
                if isinstance(d_op, Element)
                else d_op
            )
            check_same_tile(v, d, where)
            return emit_tile_op(f"tl.atomic_{kind}", d, v)
        d_op = tile_operand(dst, f"{where}: dst", _ops.ACCESS_READ_WRITE)
        if not isinstance(d_op, Element):
            if fetch:
                raise UnsupportedError(
                    f"T.atomic_{kind}(return_prev=True): only a scalar update of one "
                    "element returns its previous value (as in TileLang); dst is the tile "
                    f"{d_op.buffer.name}{fmt_extents(d_op.extents)}"
                )
            return _scalar_onto_tile(kind, d_op, as_value(value, d_op.dtype))
        d = element_region_of(dst, where, _ops.ACCESS_READ_WRITE)
        if fetch:
            return fetching_atomic(kind, d, as_value(value, d.dtype))
        return emit_tile_op(f"tl.atomic_{kind}", d, as_value(value, d.dtype))

    atomic.__name__ = f"atomic_{kind}"
    atomic.__doc__ = (
        f"Atomic {kind} of ``value`` into ``dst``: an element ``A[i, j]`` with a scalar "
        "value (each thread that reaches it updates), or a tile with a tile value of the "
        "same extents (elementwise) or with a scalar value (every element of the tile "
        "updated with it), each element of a tile once. "
        "``memory_order`` (checked) is a hint: every target's atomics are at least as "
        "strong as ``relaxed`` and the kernel's barriers order them; ``use_tma`` and "
        "``annotations`` are hints too. With ``return_prev=True`` (a scalar update "
        "only) the call is an expression: ``dst``'s value from just before this "
        "thread's update, read and updated as one atomic step (`fetching_atomic`).\n\n"
        "Raises:\n    UnsupportedError: ``return_prev=True`` with a tile value or a "
        "tile ``dst``, or outside a kernel body."
    )
    return atomic


def _scalar_onto_tile(kind: str, dst: Region, value: Any) -> Any:
    """A scalar onto a tile: each element of the tile updated once (a tile atomic). The
    front end writes a tile with a non-unit extent as a ``T.Parallel`` loop of element
    atomics (`tl_ir.run_time_tiles`); a one-element tile (``T.atomic_add(B, 1)`` with
    ``B`` of shape ``(1,)``) is put in a ``T.Parallel(1)`` loop here, since its encoding
    cannot be told from an element access's (which every thread runs)."""
    if any(_ops.const_int(e) != 1 for e in dst.extents) or not IRBuilder.is_in_scope():
        return emit_tile_op(f"tl.atomic_{kind}", dst, value)
    with Parallel(1):
        return emit_tile_op(f"tl.atomic_{kind}", dst, value)


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")


def _vector_operand(value: Any, width: int, access: int, where: str) -> Region:
    operand = tile_operand(value, where, access)
    if isinstance(operand, Element):
        return anchor(operand, [tirx.IntImm("int32", width)], access, where)
    wide = [e for e in operand.extents if _ops.const_int(e) != 1]
    if len(wide) != 1 or _ops.const_int(wide[0]) != width:
        raise ShapeMismatchError(
            f"{where}: expected an element access or a run of {width} elements, got "
            f"{operand.buffer.name}{fmt_extents(operand.extents)}"
        )
    return operand


def _atomic_add_wide(width: int) -> Callable[..., Any]:
    def atomic_add_wide(dst: Any, value: Any, return_prev: bool = False) -> Any:
        where = f"T.atomic_addx{width}(dst, value)"
        if check_flag(return_prev, f"T.atomic_addx{width}(return_prev=...)"):
            raise UnsupportedError(
                f"T.atomic_addx{width}(return_prev=True): returning the previous values is "
                "not supported; the atomic updates dst and returns nothing"
            )
        d = _vector_operand(dst, width, _ops.ACCESS_READ_WRITE, f"{where}: dst")
        v = _vector_operand(value, width, _ops.ACCESS_READ, f"{where}: value")
        check_same_tile(v, d, where)
        return emit_tile_op("tl.atomic_add", d, v)

    atomic_add_wide.__name__ = f"atomic_addx{width}"
    atomic_add_wide.__doc__ = (
        f"TileLang's {width}-wide atomic add: ``dst[..., j + k] += value[..., j + k]`` for "
        f"k < {width}, each element atomically (``dst`` and ``value`` are element accesses "
        f"``B[i, j]`` or runs ``B[i, j:j + {width}]`` along the last dim). TileLang's "
        "single wide instruction is one target's way to do it; each element's update is "
        "atomic on every target, which is what the sum needs.\n\n"
        "Raises:\n    ShapeMismatchError: an operand is not one element or a run of "
        f"{width}.\n    UnsupportedError: ``return_prev=True``."
    )
    return atomic_add_wide


atomic_addx2 = _atomic_add_wide(2)
atomic_addx4 = _atomic_add_wide(4)
