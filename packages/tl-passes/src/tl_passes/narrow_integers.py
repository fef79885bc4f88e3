"""Narrow-integer arithmetic written so that it wraps at its own width in C-like
languages.

C and C++ promote ``int8_t``/``uint8_t``/``int16_t``/``uint16_t`` operands to ``int``
before any arithmetic, so an 8- or 16-bit intermediate the IR wraps to its dtype is not
wrapped in printed source when it is compared, divided, shifted right or widened
afterwards. `wrap_narrow_integer_arithmetic` rewrites each chosen narrow operation as
the operation on operands widened to 32 bits (``uint32`` for unsigned types: ``int``'s
product of two ``uint16`` values could overflow, which C leaves undefined) cast back to
the narrow type, so the source says ``(int8_t)((int32_t)a << 4)`` and the value is the
IR's. A backend picks the operations (those that can leave the narrow range, or every
one when its language's overloads need each narrow operand printed as its narrow type)
and whether vector dtypes are rewritten; an LLVM-based backend folds the widen/narrow
pair back into the narrow instruction.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

__all__ = [
    "EVERY_NARROW_OPERATION",
    "WRAPPING_OPERATIONS",
    "wide_dtype",
    "wrap_narrow_integer_arithmetic",
]

#: Narrow integer element dtype -> the 32-bit type its arithmetic is carried out in.
_WIDE = {"int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}

#: The operations whose narrow result can leave the narrow range (``-128 / -1``
#: overflows int8), plus ``~`` (`tirx.BitwiseNot`).
WRAPPING_OPERATIONS: tuple[type, ...] = (
    tirx.Add,
    tirx.Sub,
    tirx.Mul,
    tirx.Div,
    tirx.FloorDiv,
    tirx.LShift,
    tirx.BitwiseNot,
)

#: Every integer operation: the wrapping ones and those whose result always fits
#: (``% & | ^ >>``, min, max).
EVERY_NARROW_OPERATION: tuple[type, ...] = (
    *WRAPPING_OPERATIONS,
    tirx.Mod,
    tirx.FloorMod,
    tirx.Min,
    tirx.Max,
    tirx.RShift,
    tirx.BitwiseAnd,
    tirx.BitwiseOr,
    tirx.BitwiseXor,
)


def wide_dtype(dtype: str, *, vectors: bool = True) -> str | None:
    """The 32-bit dtype (same lanes) narrow-integer ``dtype`` is computed in
    (``"uint8x4"`` -> ``"uint32x4"``); ``None`` when ``dtype`` is not an 8- or 16-bit
    integer, or is a vector and ``vectors`` is false."""
    if not dtype:
        return None
    try:
        parsed = tvm.DataType(dtype)
    except Exception:  # not a dtype (a handle, a void call)
        return None
    if parsed.lanes != 1 and not vectors:
        return None
    element = str(parsed.with_lanes(1)) if parsed.lanes != 1 else dtype
    wide = _WIDE.get(element)
    if wide is None:
        return None
    return wide if parsed.lanes == 1 else f"{wide}x{parsed.lanes}"


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


def wrap_narrow_integer_arithmetic(
    stmt: tirx.Stmt,
    operations: tuple[type, ...] = EVERY_NARROW_OPERATION,
    *,
    vectors: bool = True,
) -> tirx.Stmt:
    """``stmt`` with every narrow-integer node of the kinds in ``operations`` (binary
    operations and `tirx.BitwiseNot`) computed at 32 bits and cast back to its dtype;
    vector dtypes too when ``vectors`` is true (module docstring)."""

    def rewrite_binary(node: Any) -> Any:
        dtype = _dtype(node)
        wide = wide_dtype(dtype, vectors=vectors)
        if wide is None:
            return node
        widened = type(node)(tirx.Cast(wide, node.a), tirx.Cast(wide, node.b))
        return tirx.Cast(dtype, widened)

    def rewrite_not(node: Any) -> Any:
        dtype = _dtype(node)
        wide = wide_dtype(dtype, vectors=vectors)
        if wide is None:
            return node
        return tirx.Cast(dtype, tirx.BitwiseNot(tirx.Cast(wide, node.a)))

    binary = tuple(kind for kind in operations if kind is not tirx.BitwiseNot)
    rules: list[tuple[Any, Any]] = [(binary, rewrite_binary)]
    if tirx.BitwiseNot in operations:
        rules.append((tirx.BitwiseNot, rewrite_not))
    mapped: tirx.Stmt = tvm_ffi.structural_map(stmt, rules, order="post")
    return mapped
