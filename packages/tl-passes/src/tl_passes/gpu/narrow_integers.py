"""`gpu-wrap-narrow-integers`: 8- and 16-bit integer arithmetic wraps at its own width
in C-like device languages (CUDA C++), as the IR means it.

C++ promotes narrow operands to ``int`` before any arithmetic, so a narrow intermediate
the IR wraps to its dtype was never wrapped in the printed source when it was compared,
divided, max/min'ed, shifted right or converted: on uint8 ``T.max(a >> 2, a + a) // 3``
gave ``89`` for ``a = 134`` (``268 // 3``) instead of ``11``, and on int8 ``a + a < a``
was false for ``a = 100``. This pass rewrites every narrow operation, scalar or vector,
with `tl_passes.narrow_integers.wrap_narrow_integer_arithmetic`: the ones that cannot
leave the range too, so that every narrow operand is printed as its narrow type (a
wrapped ``(unsigned char)(...)`` next to an unwrapped ``a >> 2``, an ``int`` in C++,
made ``max(int, unsigned char)`` an ambiguous overload). A backend whose device
language promotes narrow integers puts `GpuWrapNarrowIntegersPass` in its pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tvm import tirx

from tl_passes.narrow_integers import wrap_narrow_integer_arithmetic
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["GpuWrapNarrowIntegersPass"]


@dataclass(frozen=True)
class GpuWrapNarrowIntegersPass(PrimFuncPass):
    """Wrap narrow-integer arithmetic at its width (module docstring)."""

    name: ClassVar[str] = "gpu-wrap-narrow-integers"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its narrow-integer arithmetic wrapped."""
        return wrap_narrow_integer_arithmetic(body)
