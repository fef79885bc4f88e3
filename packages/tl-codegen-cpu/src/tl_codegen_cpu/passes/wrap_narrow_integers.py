"""`cpu-wrap-narrow-integers` (``c`` only): 8- and 16-bit integer arithmetic wraps at
its own width, as the IR means it.

C promotes ``int8_t``/``uint8_t``/``int16_t``/``uint16_t`` operands to ``int`` before any
arithmetic, so an intermediate the IR wraps to its dtype was never wrapped in TVM's C:
``(A[i] << 4) >> 4`` on int8 (the sign extension of a nibble) returned ``A[i]``
unchanged, ``T.cast(B[i] - B[j], "int32")`` on uint8 gave ``-17`` for ``239``, and an
int16 product widened afterwards kept bits int16 has not (``llvm`` was right: LLVM IR
computes at the declared width). This pass rewrites each narrow ``+ - * <<`` and
division (``-128 / -1`` overflows int8) as the operation on operands widened to 32 bits
(``uint32`` for unsigned types, where C's ``int`` product of two ``uint16`` values could
overflow, which C leaves undefined), cast back to the narrow type: the C source then
says ``(int8_t)((int32_t)A[i] << 4)``, and the value is the IR's. Operations whose
result always fits (``& | ^ ~ >>``, ``%``, min, max) on already-wrapped operands are
left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm_ffi
from tvm import tirx

from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["NARROW_INTEGERS", "CpuWrapNarrowIntegersPass", "wrap_narrow_integers"]

#: Narrow integer dtype -> the 32-bit type its arithmetic is carried out in.
NARROW_INTEGERS = {"int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}

_WRAPPED = (
    tirx.Add,
    tirx.Sub,
    tirx.Mul,
    tirx.Div,
    tirx.FloorDiv,
    tirx.LShift,
)


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


def wrap_narrow_integers(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every narrow-integer ``+ - * / // <<`` computed at 32 bits and cast
    back to its dtype."""

    def rewrite(node: Any) -> Any:
        dtype = _dtype(node)
        wide = NARROW_INTEGERS.get(dtype)
        if wide is None:
            return node
        operation = type(node)
        widened = operation(tirx.Cast(wide, node.a), tirx.Cast(wide, node.b))
        return tirx.Cast(dtype, widened)

    return tvm_ffi.structural_map(stmt, (_WRAPPED, rewrite), order="post")


@dataclass(frozen=True)
class CpuWrapNarrowIntegersPass(PrimFuncPass):
    """Wrap narrow-integer arithmetic at its width for C (module docstring)."""

    name: ClassVar[str] = "cpu-wrap-narrow-integers"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its narrow-integer arithmetic wrapped."""
        return wrap_narrow_integers(body)
