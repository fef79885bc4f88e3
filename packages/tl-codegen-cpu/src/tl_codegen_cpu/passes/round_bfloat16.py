"""`cpu-round-bfloat16`: every conversion to bfloat16 rounds, on the bits.

TVM's bfloat16 legalization, which runs inside its C and LLVM code generators, keeps a
block-local bfloat16 tile in float32 storage and drops every pair
``Cast(float32, Cast(bfloat16, x))`` as if the round trip changed nothing. So a value
stored into a bfloat16 shared or fragment tile kept all its float32 bits (a GEMM fed by
the usual float32 -> bfloat16 staging copy multiplied unrounded operands), arithmetic
and ``T.cumsum`` in such a tile never rounded, and ``T.cast(T.cast(x, "bfloat16"),
"float32")`` returned ``x``; a conversion from float16 or int32 (257 -> 256) was kept
exact too. This pass, which runs after `cpu-legalize-half-precision`, rewrites every
``Cast(bfloat16, v)`` of another type as ``Cast(bfloat16, round(v))``, ``round``
written out on the float32 bits (round to nearest, ties to even; NaN kept; ``v``
converted to float32 first), so whatever storage TVM gives the value, it is already
a bfloat16 value. Stores into bfloat16 memory, which TVM rounds itself, then round an
exact value: the same result.
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


def round_bfloat16_conversions(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every conversion to bfloat16 reading an explicitly rounded value."""

    def rewrite(node: Any) -> Any:
        source = _dtype(node.value)
        if _dtype(node) != "bfloat16" or source in ("bfloat16", ""):
            return node
        value = node.value if source == "float32" else tirx.Cast("float32", node.value)
        return tirx.Cast("bfloat16", round_to_bfloat16(value))

    return tvm_ffi.structural_map(stmt, (tirx.Cast, rewrite), order="post")


@dataclass(frozen=True)
class CpuRoundBfloat16Pass(PrimFuncPass):
    """Round every conversion to bfloat16 explicitly (module docstring)."""

    name: ClassVar[str] = "cpu-round-bfloat16"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with every conversion to bfloat16 rounded on the bits."""
        return round_bfloat16_conversions(body)
