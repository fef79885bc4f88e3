"""Atomics of one element that TileLang offers without a tile form: ``T.atomic_or``,
``T.atomic_load`` and ``T.atomic_store``, each a ``tl.atomic_<kind>`` call described
by `tl_ir.ops.AtomicOp` (a load is a fetching atomic: the value lands in a fresh
thread-private scalar and the expression is a load of it)."""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, UnsupportedError
from tl_ir.language._fetching_atomics import fetching_atomic
from tl_ir.language._hints import MEMORY_ORDERS, check_choice
from tl_ir.language._operands import (
    Element,
    as_value,
    element_region_of,
    emit_tile_op,
    fmt_extents,
    is_tile_operand,
    tile_operand,
)
from tl_ir.ops import Region

__all__ = [
    "ATOMIC_LOAD_MEMORY_ORDERS",
    "ATOMIC_STORE_MEMORY_ORDERS",
    "atomic_load",
    "atomic_or",
    "atomic_store",
]

#: ``memory_order=`` values an atomic load takes (TileLang's: no release side).
ATOMIC_LOAD_MEMORY_ORDERS: tuple[str, ...] = ("relaxed", "consume", "acquire", "seq_cst")
#: ``memory_order=`` values an atomic store takes (TileLang's: no acquire side).
ATOMIC_STORE_MEMORY_ORDERS: tuple[str, ...] = ("relaxed", "release", "seq_cst")


def _one_element(value: Any, where: str, access: int) -> Region:
    """The one element ``value`` names: an element access ``A[i, j]``, or a buffer or
    region whose every extent is 1 (TileLang passes a one-element buffer)."""
    operand = tile_operand(value, where, access)
    if isinstance(operand, Element):
        return element_region_of(value, where, access)
    if any(_ops.const_int(e) != 1 for e in operand.extents):
        raise UnsupportedError(
            f"{where}: expected one element A[i, j] (TileLang's atomic takes one address), "
            f"got the tile {operand.buffer.name}{fmt_extents(operand.extents)}"
        )
    return operand


def _is_integer(dtype: str) -> bool:
    parsed = tvm.DataType(dtype)
    return parsed.type_code in (tvm.DataTypeCode.INT, tvm.DataTypeCode.UINT) and parsed.bits > 1


def atomic_or(dst: Any, value: Any, memory_order: str | None = None) -> Any:
    """Atomically ``dst |= value`` on one element of an integer buffer: every thread that
    reaches it runs it (a scalar atomic, as ``T.atomic_add(dst[i], v)``).

    ``memory_order`` (checked against TileLang's names) is a hint: every target's
    atomics are at least ``relaxed`` and the kernel's barriers order them.

    Raises:
        UnsupportedError: ``dst`` or ``value`` is a tile (TileLang's atomic_or takes one
            address).
        KernelTypeError: ``dst`` is not an integer buffer, or a hint has a wrong value.
    """
    where = "T.atomic_or(dst, value)"
    check_choice(memory_order, MEMORY_ORDERS, "T.atomic_or(memory_order=...)")
    if is_tile_operand(value):
        raise UnsupportedError(
            f"{where}: value must be a scalar (TileLang's atomic_or updates one element), "
            "got a tile"
        )
    d = _one_element(dst, f"{where}: dst", _ops.ACCESS_READ_WRITE)
    if not _is_integer(d.dtype):
        raise KernelTypeError(
            f"{where}: expected dst in an integer buffer (int8..int64, uint8..uint64), "
            f"got {d.buffer.name} of dtype {d.dtype}"
        )
    return emit_tile_op("tl.atomic_or", d, as_value(value, d.dtype))


def atomic_load(src: Any, memory_order: str = "seq_cst") -> Any:
    """The value of one element ``src``, read atomically: an expression of ``src``'s
    dtype (each thread that evaluates it reads once).

    ``memory_order`` is one of `ATOMIC_LOAD_MEMORY_ORDERS` (default ``seq_cst``);
    every target reads at least that strongly (its load is sequentially consistent).

    Raises:
        KernelTypeError: ``memory_order`` is not a load order (``release``, ``acq_rel``).
        UnsupportedError: ``src`` is a tile, or it is called outside a kernel body.
    """
    where = "T.atomic_load(src)"
    _check_order(memory_order, ATOMIC_LOAD_MEMORY_ORDERS, "T.atomic_load(memory_order=...)")
    s = _one_element(src, f"{where}: src", _ops.ACCESS_READ)
    return fetching_atomic("load", s, tirx.const(0, s.dtype))


def atomic_store(dst: Any, src: Any, memory_order: str = "seq_cst") -> Any:
    """Atomically store the scalar ``src`` into one element ``dst`` (every thread that
    reaches it stores, as a scalar atomic does).

    ``memory_order`` is one of `ATOMIC_STORE_MEMORY_ORDERS` (default ``seq_cst``);
    every target stores at least that strongly (its store is sequentially consistent).

    Raises:
        KernelTypeError: ``memory_order`` is not a store order (``acquire``, ``consume``,
            ``acq_rel``).
        UnsupportedError: ``dst`` or ``src`` is a tile.
    """
    where = "T.atomic_store(dst, src)"
    _check_order(memory_order, ATOMIC_STORE_MEMORY_ORDERS, "T.atomic_store(memory_order=...)")
    if is_tile_operand(src):
        raise UnsupportedError(
            f"{where}: src must be a scalar (TileLang's atomic_store writes one element), "
            "got a tile"
        )
    d = _one_element(dst, f"{where}: dst", _ops.ACCESS_WRITE)
    return emit_tile_op("tl.atomic_store", d, as_value(src, d.dtype))


def _check_order(memory_order: Any, allowed: tuple[str, ...], where: str) -> None:
    if not isinstance(memory_order, str) or memory_order not in allowed:
        raise KernelTypeError(
            f"{where}: expected one of {', '.join(allowed)}, got {memory_order!r}"
        )
