"""`cpu-round-bfloat16`: a value converted to bfloat16 and back is rounded.

TVM's bfloat16 legalization, which runs inside its C and LLVM code generators,
removes every pair ``Cast(float32, Cast(bfloat16, x))`` as if the round trip changed
nothing. So ``T.cast(T.cast(x, "bfloat16"), "float32")`` (a kernel rounding a value to
bfloat16 on purpose) returned ``x`` unrounded on both CPU targets, and so did every
intermediate rounding `cpu-legalize-half-precision` writes between chained bfloat16
operations. This pass, which runs after that one, writes the rounding out on the
bits where such a pair reads a float32 value (round to nearest, ties to even; NaN
kept), so what survives TVM's legalization is already the bfloat16 value. A float64
value is converted to float32 first. Stores into bfloat16 memory, which TVM rounds
itself, are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm_ffi
from tvm import tirx

from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuRoundBfloat16Pass", "round_to_bfloat16"]


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


def round_to_bfloat16(value: Any) -> Any:
    """The float32 ``value`` rounded to the nearest bfloat16 (ties to even), as float32."""
    bits = tirx.reinterpret("uint32", value)
    lowest_kept = tirx.bitwise_and(tirx.shift_right(bits, tirx.const(16, "uint32")), 1)
    rounded = tirx.bitwise_and(
        bits + tirx.const(0x7FFF, "uint32") + lowest_kept, tirx.const(0xFFFF0000, "uint32")
    )
    return tirx.Select(tirx.isnan(value), value, tirx.reinterpret("float32", rounded))


def round_bfloat16_round_trips(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every ``Cast(wide float, Cast(bfloat16, float value))`` reading an
    explicitly rounded value."""

    def rewrite(node: Any) -> Any:
        inner = node.value
        if not (
            isinstance(inner, tirx.Cast)
            and _dtype(inner) == "bfloat16"
            and _dtype(node) in ("float32", "float64")
            and _dtype(inner.value) in ("float32", "float64")
        ):
            return node
        value = inner.value
        if _dtype(value) == "float64":
            value = tirx.Cast("float32", value)
        return tirx.Cast(_dtype(node), tirx.Cast("bfloat16", round_to_bfloat16(value)))

    return tvm_ffi.structural_map(stmt, (tirx.Cast, rewrite), order="post")


@dataclass(frozen=True)
class CpuRoundBfloat16Pass(PrimFuncPass):
    """Round bfloat16 round trips explicitly (module docstring)."""

    name: ClassVar[str] = "cpu-round-bfloat16"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its bfloat16 round trips rounded on the bits."""
        return round_bfloat16_round_trips(body)
