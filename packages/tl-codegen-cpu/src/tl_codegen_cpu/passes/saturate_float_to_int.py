"""`cpu-saturate-float-to-int`: a float converted to an integer type saturates, as on
GPUs.

PTX's ``cvt.rzi`` (what ``T.cast(x, "int32")`` compiles to on CUDA, and TileLang's
meaning) truncates toward zero and clamps to the integer type's range, with NaN
giving 0. On the CPU the conversion of a value outside the range is undefined in C
and poison in LLVM; x86 gave the "integer indefinite" (``INT_MIN`` for ``3e9``, NaN
and ``inf``; ``int8`` of ``130.7`` gave ``-126``). This pass writes each such
conversion in a value a statement stores so that the conversion itself only ever
sees a value in range: ``!isnan(x) * (int)min(max(x, MIN), MAX)`` where MIN and MAX
are floats of the source type (8/16-bit targets from float32, up to 32-bit from
float64: one lane width throughout, so the loops vectorize as before), else
``!isnan(x) * (x >= MAX + 1 ? MAX : (int)max(x, MIN))``. Index arithmetic
is left alone, as in `cpu-wrap-integer-overflow`. float16 and bfloat16 sources are
compared as float32 (exact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
from tvm import tirx

from tl_codegen_cpu.lowering.nan_rule import is_nan
from tl_codegen_cpu.lowering.stored_values import map_stored_values
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuSaturateFloatToIntPass", "saturate_float_to_int"]


def _constant(expr: Any) -> float | None:
    if isinstance(expr, tirx.Broadcast):
        expr = expr.value
    return float(expr.value) if isinstance(expr, tirx.FloatImm) else None


def _clamped_within(value: Any, low: int, high: int) -> bool:
    """Whether ``value`` is ``min(max(x, a), b)`` or ``max(min(x, b), a)`` with constant
    bounds inside ``[low, high]`` (a quantization's own clamp; NaN gives a bound, as
    float max/min ignore NaN)."""
    bounds: list[float] = []
    for _ in range(2):
        if not isinstance(value, tirx.Min | tirx.Max):
            return False
        bound = _constant(value.b)
        if bound is None:
            return False
        bounds.append(bound)
        value = value.a
    return all(low <= bound <= high for bound in bounds)


def _saturating(node: Any) -> Any:
    target = tvm.DataType(str(node.ty.dtype))
    source = tvm.DataType(str(node.value.ty.dtype))
    if not source.is_float or not target.is_integer or int(target.bits) < 8:
        return node
    lanes = int(target.lanes)
    compute = "float64" if int(source.bits) == 64 else "float32"
    wide = str(tvm.DataType(compute).with_lanes(lanes))
    value = node.value if str(source.with_lanes(1)) == compute else tirx.Cast(wide, node.value)
    bits = int(target.bits)
    signed = str(target).startswith("int")
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)

    def const(number: float | int, dtype: str) -> Any:
        scalar = tirx.const(number, str(tvm.DataType(dtype).with_lanes(1)))
        return scalar if lanes == 1 else tirx.Broadcast(scalar, lanes)

    target_type = str(target)
    if _clamped_within(node.value, low, high):
        return node
    mantissa_bits = 53 if compute == "float64" else 24
    # NaN gives 0 as a product with the "is a number" flag: TVM prints a select on a
    # NaN test as an if/else that gcc did not vectorize (4x on an int8 quantization).
    is_number = tirx.Cast(target_type, tirx.Not(is_nan(value)))
    bounded = tirx.Max(value, const(float(low), wide))  # NaN -> MIN: in range
    if bits <= mantissa_bits:
        # MAX is a float of this type: clamp there, convert once (one lane width).
        bounded = tirx.Min(bounded, const(float(high), wide))
        return is_number * tirx.Cast(target_type, bounded)
    # MAX is not a float of this type, but MAX + 1 is (a power of two).
    too_big = value >= const(float(high + 1), wide)
    clamped = tirx.Select(too_big, const(high, target_type), tirx.Cast(target_type, bounded))
    return is_number * clamped


def saturate_float_to_int(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with each stored value's float-to-integer conversion saturating."""
    return map_stored_values(stmt, (tirx.Cast,), _saturating, skip_indices=True)


@dataclass(frozen=True)
class CpuSaturateFloatToIntPass(PrimFuncPass):
    """Make stored float-to-integer conversions saturate (module docstring)."""

    name: ClassVar[str] = "cpu-saturate-float-to-int"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its stored float-to-integer conversions saturating."""
        return saturate_float_to_int(body)
