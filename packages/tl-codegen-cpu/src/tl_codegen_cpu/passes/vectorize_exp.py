"""`cpu-vectorize-exp`: fp32 ``exp``/``exp2`` rewritten into branch-free arithmetic.

Neither CPU path vectorizes a libm ``expf`` call: gcc only with
``-ffast-math``, and LLVM scalarizes ``llvm.exp`` into one libm call per lane.
This pass replaces every float32 ``exp(x)`` and ``exp2(x)`` call with an
expression both compilers turn into vector code (selects, casts, integer
shifts, multiply-adds; no call):

* clamp: ``x`` is clamped to the range where the result is neither certainly
  ``inf`` nor certainly ``0``; inputs at or below the low bound (``-inf``
  included) and NaN are worked on as ``0``, so no lane ever computes with
  subnormal intermediates it does not need (they cost a microcode assist per
  lane on many x86 cores), and those lanes get an exact ``0`` (the correctly
  rounded result) or their NaN back at the end;
* range reduction: ``n = round(x / ln 2)`` (``exp2``: ``round(x)``), computed by
  a float-to-int truncation of a value made positive first, and
  ``r = x - n ln 2`` with ``ln 2`` split in two parts (Cody-Waite) so ``r`` is
  exact to float32 rounding;
* ``e^r`` on ``[-ln 2 / 2, ln 2 / 2]`` as ``1 + r + r^2 q(r)``, ``q`` a degree-4
  polynomial fitted for minimal relative error (under 1 ulp on the interval);
* scaling by ``2^n`` in two halves ``2^(n >> 1) * 2^(n - (n >> 1))``, each built
  by shifting a biased exponent into place, so that overflow gives ``inf``
  and results in the subnormal range round once.

The result is within 2 ulp of the correctly rounded ``exp`` over the whole
float32 range (tested against numpy). float64 and other dtypes are left to
libm. The pass runs on both CPU targets, after `cpu-legalize-half-precision` (so
half-precision ``exp`` widened to float32 benefits too) and before
`cpu-legalize-intrinsics`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.pass_base import PassContext, PrimFuncPass

F32 = "float32"
I32 = "int32"

#: Above this, float32 ``exp`` is ``inf`` (``exp(88.7229) > FLT_MAX``).
EXP_CLAMP_HIGH = 88.75
#: Below this, float32 ``exp`` rounds to ``0`` (``exp(-104) < FLT_TRUE_MIN / 2``).
EXP_CLAMP_LOW = -104.0
#: Same bounds for ``exp2``.
EXP2_CLAMP_HIGH = 128.5
EXP2_CLAMP_LOW = -151.0

#: ``ln 2`` in two parts: the high part has trailing zero bits, so ``n * LN2_HIGH``
#: is exact for every ``|n| <= 256``.
LN2_HIGH = 0.693145751953125
LN2_LOW = 1.428606765330187e-06
LOG2_E = 1.4426950408889634

#: ``q(r) = c0 + c1 r + c2 r^2 + c3 r^3 + c4 r^4`` with ``e^r ~= 1 + r + r^2 q(r)``
#: on ``[-ln 2 / 2, ln 2 / 2]``: a weighted least-squares fit iterated towards
#: minimal relative error (Lawson), rounded to float32 (max error 0.98 ulp).
POLY_COEFFICIENTS: tuple[float, ...] = (
    0.4999999403953552,
    0.1666652113199234,
    0.04166838899254799,
    0.008368710055947304,
    0.001381461275741458,
)

#: Added before truncating ``x / ln 2 + 1/2`` to an integer, so the truncated
#: value is positive and truncation equals ``floor`` (subtracted afterwards).
_ROUND_OFFSET = 256


def _f32(value: float) -> tirx.PrimExpr:
    return tirx.const(value, F32)


def _i32(value: int) -> tirx.PrimExpr:
    return tirx.const(value, I32)


def _power_of_two(exponent: tirx.PrimExpr) -> tirx.PrimExpr:
    """``2^exponent`` as float32 for ``-126 <= exponent <= 127`` (normal range)."""
    biased = tirx.shift_left(exponent + _i32(127), _i32(23))
    return tirx.reinterpret(F32, biased)


def fast_exp_f32(x: tirx.PrimExpr, *, base_two: bool = False) -> tirx.PrimExpr:
    """A branch-free float32 expression for ``exp(x)`` (``exp2(x)`` if ``base_two``).

    Args:
        x: a float32 scalar expression.
        base_two: compute ``2^x`` instead of ``e^x``.

    Returns:
        The expression (see the module docstring); ``x`` is evaluated once
        (bound by a ``Let``).

    Raises:
        ValueError: ``x`` is not float32.
    """
    dtype = str(x.ty.dtype)
    if dtype != F32:
        raise ValueError(f"fast_exp_f32: x must be float32, got {dtype}")
    high, low = (EXP2_CLAMP_HIGH, EXP2_CLAMP_LOW) if base_two else (EXP_CLAMP_HIGH, EXP_CLAMP_LOW)
    x_var = tirx.Var("exp_x", F32)
    # Inputs at or below `low` (and -inf, and NaN: `x > low` is false) are worked on
    # as 0 and replaced by an exact 0 at the end: computing them would scale by
    # ~2^-150, whose subnormal intermediates and underflow cost a microcode assist per
    # lane on many x86 cores (a masked attention row is mostly -inf). `x < high ? x
    # : high` clamps the other side; everything below works on finite values.
    clamped_var = tirx.Var("exp_xc", F32)
    above_low = x_var > _f32(low)
    below_high = tirx.Select(x_var < _f32(high), x_var, _f32(high))
    clamped = tirx.Select(above_low, below_high, _f32(0.0))
    scaled = clamped_var if base_two else clamped_var * _f32(LOG2_E)
    n_var = tirx.Var("exp_n", I32)
    n_value = tirx.Cast(I32, scaled + _f32(_ROUND_OFFSET + 0.5)) - _i32(_ROUND_OFFSET)
    n_float = tirx.Cast(F32, n_var)
    r_var = tirx.Var("exp_r", F32)
    if base_two:
        r_value = (clamped_var - n_float) * _f32(math.log(2.0))
    else:
        r_value = clamped_var - n_float * _f32(LN2_HIGH) - n_float * _f32(LN2_LOW)
    poly: tirx.PrimExpr = _f32(POLY_COEFFICIENTS[-1])
    for coefficient in reversed(POLY_COEFFICIENTS[:-1]):
        poly = poly * r_var + _f32(coefficient)
    e_r = _f32(1.0) + r_var + r_var * r_var * poly
    half = tirx.shift_right(n_var, _i32(1))
    scaled_var = tirx.Var("exp_scaled", F32)
    scaled_value = e_r * _power_of_two(half) * _power_of_two(n_var - half)
    # NaN test on the bits: `x != x` is folded away under LLVM's fast-math flags.
    magnitude_bits = tirx.bitwise_and(tirx.reinterpret(I32, x_var), _i32(0x7FFFFFFF))
    # Both arms are variables: gcc (with its default -ftrapping-math) if-converts a
    # select only when neither arm holds floating-point arithmetic.
    finite_result = tirx.Select(x_var > _f32(low), scaled_var, _f32(0.0))
    result = tirx.Select(magnitude_bits > _i32(0x7F800000), x_var, finite_result)
    result = tirx.Let(scaled_var, scaled_value, result)
    result = tirx.Let(r_var, r_value, result)
    result = tirx.Let(n_var, n_value, result)
    result = tirx.Let(clamped_var, clamped, result)
    return tirx.Let(x_var, x, result)


def vectorize_exp(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every float32 ``exp``/``exp2`` call replaced by `fast_exp_f32`."""

    def rewrite(call: Any) -> Any:
        op = call.op
        if not isinstance(op, tvm.ir.Op) or len(call.args) != 1:
            return call
        name = str(op.name)
        if name not in ("tirx.exp", "tirx.exp2") or str(call.args[0].ty.dtype) != F32:
            return call
        return fast_exp_f32(call.args[0], base_two=name == "tirx.exp2")

    return tvm_ffi.structural_map(stmt, (tvm.ir.Call, rewrite), order="post")


@dataclass(frozen=True)
class CpuVectorizeExpPass(PrimFuncPass):
    """Replace float32 ``exp``/``exp2`` calls with a vectorizable polynomial (module docstring).

    Args:
        kinds: the target kinds the rewrite applies to (others are left alone;
            a run without a target applies it).
    """

    name: ClassVar[str] = "cpu-vectorize-exp"
    kinds: tuple[str, ...] = ("c", "llvm")

    def applies_to(self, ctx: PassContext) -> bool:
        """Return whether ``ctx``'s target kind is one of `kinds` (or no target is set)."""
        return ctx.target is None or str(ctx.target.kind.name) in self.kinds

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its float32 ``exp``/``exp2`` calls rewritten."""
        return vectorize_exp(body)
