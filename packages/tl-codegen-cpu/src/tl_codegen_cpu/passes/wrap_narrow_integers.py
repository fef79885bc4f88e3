"""`cpu-wrap-narrow-integers` (``c`` only): 8- and 16-bit integer arithmetic wraps at
its own width, as the IR means it.

C promotes ``int8_t``/``uint8_t``/``int16_t``/``uint16_t`` operands to ``int`` before any
arithmetic, so an intermediate the IR wraps to its dtype was never wrapped in TVM's C:
``(A[i] << 4) >> 4`` on int8 (the sign extension of a nibble) returned ``A[i]``
unchanged, ``T.cast(B[i] - B[j], "int32")`` on uint8 gave ``-17`` for ``239``, and an
int16 product widened afterwards kept bits int16 has not (``llvm`` was right: LLVM IR
computes at the declared width). This pass rewrites each scalar narrow ``+ - * <<`` and
division (``-128 / -1`` overflows int8) with
`tl_passes.narrow_integers.wrap_narrow_integer_arithmetic`, so the C source says
``(int8_t)((int32_t)A[i] << 4)``. Operations whose result always fits
(``& | ^ >>``, ``%``, min, max) on already-wrapped operands are left as they are, and so
are vector dtypes (gcc's vector extensions compute at the element width) and ``~``
(`cpu-wrap-integer-overflow` wraps it where its value is used).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tvm import tirx

from tl_passes.narrow_integers import WRAPPING_OPERATIONS, wrap_narrow_integer_arithmetic
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuWrapNarrowIntegersPass", "wrap_narrow_integers"]

_WRAPPED = tuple(kind for kind in WRAPPING_OPERATIONS if kind is not tirx.BitwiseNot)


def wrap_narrow_integers(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every scalar narrow-integer ``+ - * / // <<`` computed at 32 bits
    and cast back to its dtype."""
    return wrap_narrow_integer_arithmetic(stmt, _WRAPPED, vectors=False)


@dataclass(frozen=True)
class CpuWrapNarrowIntegersPass(PrimFuncPass):
    """Wrap narrow-integer arithmetic at its width for C (module docstring)."""

    name: ClassVar[str] = "cpu-wrap-narrow-integers"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its narrow-integer arithmetic wrapped."""
        return wrap_narrow_integers(body)
