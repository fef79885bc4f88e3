"""`gpu-wrap-narrow-integers`: 8- and 16-bit integer arithmetic wraps at its own width
in C-like device languages (CUDA C++), as the IR means it.

C++ promotes ``int8_t``/``uint8_t``/``int16_t``/``uint16_t`` (``signed char``,
``unsigned char``, ``short``, ``unsigned short``) operands to ``int`` before any
arithmetic, so a narrow intermediate the IR wraps to its dtype was never wrapped in the
printed source when it was compared, divided, max/min'ed, shifted right or converted:
on uint8 ``T.max(a >> 2, a + a) // 3`` gave ``89`` for ``a = 134`` (``268 // 3``)
instead of ``11``, and on int8 ``a + a < a`` was false for ``a = 100``. This pass
rewrites each narrow ``+ - * / // <<`` and ``~`` (scalar or vector) as the operation on
operands widened to 32 bits (``uint32`` for unsigned types: ``int``'s product of two
``uint16`` values could overflow, which C++ leaves undefined) cast back to the narrow
type, so the source says ``(signed char)(((int)a) + ((int)b))`` and the value is the
IR's. Operations whose result always fits (``& | ^ >>``, ``%``, min, max) are rewritten
the same way, so that every narrow operand is printed as its narrow type: a wrapped
``(unsigned char)(...)`` next to an unwrapped ``a >> 2`` (an ``int`` in C++) made
``max(int, unsigned char)`` an ambiguous overload.

The rewrite is target-neutral (an LLVM backend folds the widen/narrow pair back into
the narrow instruction); a backend whose device language promotes narrow integers puts
`GpuWrapNarrowIntegersPass` in its pipeline. It is the rule of the CPU ``c`` target's
``cpu-wrap-narrow-integers``, extended to vector dtypes and ``~``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["GpuWrapNarrowIntegersPass", "wide_dtype", "wrap_narrow_integer_arithmetic"]

#: Narrow integer element dtype -> the 32-bit type its arithmetic is carried out in.
_WIDE = {"int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}

#: Every binary integer operation: the ones that can leave the narrow range (``+ - *
#: / // <<``) and, so that each narrow operand of a C++ overload (``max``, ``min``) has
#: the same printed type, the ones that cannot.
_BINARY = (
    tirx.Add,
    tirx.Sub,
    tirx.Mul,
    tirx.Div,
    tirx.Mod,
    tirx.FloorDiv,
    tirx.FloorMod,
    tirx.Min,
    tirx.Max,
    tirx.LShift,
    tirx.RShift,
    tirx.BitwiseAnd,
    tirx.BitwiseOr,
    tirx.BitwiseXor,
)


def wide_dtype(dtype: str) -> str | None:
    """The 32-bit dtype (same lanes) narrow-integer ``dtype`` is computed in, ``None``
    when ``dtype`` is not an 8- or 16-bit integer (``"uint8x4"`` -> ``"uint32x4"``)."""
    if not dtype:
        return None
    try:
        parsed = tvm.DataType(dtype)
    except Exception:  # not a dtype (a handle, a void call)
        return None
    element = str(parsed.with_lanes(1)) if parsed.lanes != 1 else dtype
    wide = _WIDE.get(element)
    if wide is None:
        return None
    return wide if parsed.lanes == 1 else f"{wide}x{parsed.lanes}"


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


def wrap_narrow_integer_arithmetic(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every narrow-integer binary operation and ``~`` computed at 32 bits
    and cast back to its dtype (module docstring)."""

    def rewrite_binary(node: Any) -> Any:
        dtype = _dtype(node)
        wide = wide_dtype(dtype)
        if wide is None:
            return node
        widened = type(node)(tirx.Cast(wide, node.a), tirx.Cast(wide, node.b))
        return tirx.Cast(dtype, widened)

    def rewrite_not(node: Any) -> Any:
        dtype = _dtype(node)
        wide = wide_dtype(dtype)
        if wide is None:
            return node
        return tirx.Cast(dtype, tirx.BitwiseNot(tirx.Cast(wide, node.a)))

    mapped: tirx.Stmt = tvm_ffi.structural_map(
        stmt, [(_BINARY, rewrite_binary), (tirx.BitwiseNot, rewrite_not)], order="post"
    )
    return mapped


@dataclass(frozen=True)
class GpuWrapNarrowIntegersPass(PrimFuncPass):
    """Wrap narrow-integer arithmetic at its width (module docstring)."""

    name: ClassVar[str] = "gpu-wrap-narrow-integers"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its narrow-integer arithmetic wrapped."""
        return wrap_narrow_integer_arithmetic(body)
