"""`cuda-widen-half-math`: fp16/bf16 math functions computed in float32, rounded once.

TVM's CUDA printer writes a math call on ``half`` / ``nv_bfloat16`` operands as the
``h``-prefixed function of that name (``hexp``, ``hfmod``, ``hsinh``...). CUDA's
``cuda_fp16.h`` / ``cuda_bf16.h`` declare only some of them, and several of those are approximations
(``hexp``, ``hexp2``... evaluate ``ex2.approx`` in float32, ``hsin`` a simplified
``sinf``, patched for the inputs known to round wrong). The rest stopped the build: ``hfmod``,
``hnearbyint``, ``hsinh``, ``hcosh`` are undeclared (nvcc: "identifier is undefined");
TVM's prelude defines ``htan``, ``hatan``, ``herf``, ``hpow`` for the device pass only
(not for host code); and TVM's CUDA rules have no half version of ``log1p``,
``asin``..``atanh``, ``copysign``, ``atan2``, ``hypot``, ``nextafter`` nor ``ldexp``
("Unresolved call").

This pass rewrites, on the lowered kernel, every such call whose result is
``float16`` or ``bfloat16`` (scalar or vector) into the same call on operands
converted to ``float32`` (exact), converted back to the half type (round to nearest
even): the result is the float32 function's, rounded once, as on the CPU targets
(``cpu-legalize-half-precision``) and in the reference interpreter. TVM prints the
float32 calls as CUDA's ``expf``, ``fmodf``, ``log1pf``... Special cases:

- ``rsqrt(x)`` is ``1 / sqrt(x)`` in float32 (each correctly rounded: CUDA's
  ``rsqrtf`` is within 2 ulp only), as the interpreter defines it;
- ``ldexp(x, e)`` widens ``x`` only; an integer ``e`` is kept, a float ``e`` is
  converted to ``int32`` (truncated, as C converts it);
- ``nextafter(x, y)`` cannot be widened (the float32 step is far below a half ulp, so
  the rounded result was ``x``): it steps the half type's own bits (`half_next_after`).

``fabs`` stays as it is (``__habs`` clears the sign bit, on the device and on the
host). The roundings to an integer (``floor``, ``ceil``, ``trunc``, ``round``,
``nearbyint``) are exact either way, but ``hfloor``, ``hceil``, ``htrunc`` and
``hrint`` are declared for device code only (host code, the CPU emulation of the tests,
has none), so they are widened too. ``isnan``/``isinf``/``isfinite`` are no calls here
(the front end classifies a half operand converted to float32 when the kernel is
parsed). Other calls (``fma``, casts, selects, shuffles...) are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.builtin_ops import builtin_op_name, builtin_op_names
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = [
    "HALF_DTYPES",
    "WIDENED_MATH",
    "CudaWidenHalfMathPass",
    "half_next_after",
    "widen_half_math",
]

#: The half-precision scalar dtypes this pass widens, with the unsigned integer type of
#: their bits.
HALF_DTYPES: dict[str, str] = {"float16": "uint16", "bfloat16": "uint16"}

_COMPUTE = "float32"

#: Short names of the math functions computed in float32 on every operand (besides
#: them: ``rsqrt``, ``ldexp`` and ``nextafter``, see the module).
WIDENED_MATH: frozenset[str] = frozenset(
    {
        "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt",
        "sin", "cos", "tan", "sinh", "cosh", "tanh",
        "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf",
        "nearbyint", "round", "floor", "ceil", "trunc",
        "pow", "fmod", "copysign", "atan2", "hypot",
    }
)  # fmt: skip

_WIDENED_OPS = builtin_op_names(*WIDENED_MATH)
_RSQRT = builtin_op_name("rsqrt")
_SQRT = tvm.ir.Op.get(builtin_op_name("sqrt"))
_LDEXP = builtin_op_name("ldexp")
_NEXTAFTER = builtin_op_name("nextafter")
_REINTERPRET = builtin_op_name("reinterpret")


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


def _split(dtype: str) -> tuple[str, int]:
    """``"float16x4"`` -> ``("float16", 4)``; a scalar dtype has 1 lane."""
    parsed = tvm.DataType(dtype)
    lanes = int(parsed.lanes)
    return (dtype.rsplit("x", 1)[0] if lanes > 1 else dtype), lanes


def _with_lanes(scalar: str, lanes: int) -> str:
    return scalar if lanes == 1 else f"{scalar}x{lanes}"


def _bind(value: Any, name: str, body: Any) -> Any:
    """``body(value)``, with a computed ``value`` bound once by a ``Let`` (a load, a
    variable or a constant is used as it is)."""
    if isinstance(value, (tvm.ir.TensorLoad, tirx.Var, tirx.IntImm, tirx.FloatImm)):
        return body(value)
    var = tirx.Var(name, _dtype(value))
    return tirx.Let(var, value, body(var))


def half_next_after(x: Any, y: Any, dtype: str) -> Any:
    """``nextafter(x, y)`` of two scalar ``dtype`` (float16 or bfloat16) values: the
    value of ``dtype`` next to ``x`` in the direction of ``y``, by a step of one on its
    bits.

    NaN in, NaN out. ``x == y`` gives ``x`` for float16 (numpy's rule) and ``y`` for
    bfloat16 (C's rule, as ml_dtypes and the CPU targets); the two differ on the sign of a
    zero only. From a zero the step is to the smallest subnormal with the sign of the
    direction; otherwise the bits move one away from zero when ``y`` lies beyond ``x``,
    one toward zero else (the largest finite value steps to inf, inf to the largest
    finite value).
    """
    bits = HALF_DTYPES[dtype]

    def of(a: Any) -> Any:
        def toward(b: Any) -> Any:
            wide_a, wide_b = tirx.Cast(_COMPUTE, a), tirx.Cast(_COMPUTE, b)
            zero = tirx.const(0.0, _COMPUTE)
            up = wide_b > wide_a
            away = tirx.Or(tirx.And(up, wide_a > zero), tirx.And(tirx.Not(up), wide_a < zero))
            # never outside 0..0xFFFF: x is neither NaN nor zero here, and no y lies
            # beyond an infinite x
            one = tirx.const(1, bits)

            def step(pattern: Any) -> Any:
                moved = tirx.Select(away, pattern + one, pattern - one)
                return tirx.reinterpret(dtype, moved)

            stepped = _bind(tirx.reinterpret(bits, a), "nextafter_bits", step)
            smallest = tirx.Select(up, tirx.const(0x0001, bits), tirx.const(0x8001, bits))
            moved = tirx.Select(wide_a == zero, tirx.reinterpret(dtype, smallest), stepped)
            # isnan calls: TVM's simplifier folds ``v != v`` to false
            unordered = tirx.Or(tirx.isnan(wide_a), tirx.isnan(wide_b))
            nan = tirx.Cast(dtype, wide_a + wide_b)
            equal = a if dtype == "float16" else b
            return tirx.Select(unordered, nan, tirx.Select(wide_a == wide_b, equal, moved))

        return _bind(y, "nextafter_y", toward)

    return _bind(x, "nextafter_x", of)


def _widen_call(call: Any, dtype: str, refused: list[str]) -> Any:
    """The replacement of the half-precision math ``call`` of result ``dtype``, or
    ``call`` itself when it is no math call this pass widens (or one it cannot compute,
    described in ``refused``)."""
    name = str(call.op.name)
    scalar, lanes = _split(dtype)
    wide = _with_lanes(_COMPUTE, lanes)
    if name in _WIDENED_OPS:
        if any(_dtype(arg) != dtype for arg in call.args):
            return call
        args = [tirx.Cast(wide, arg) for arg in call.args]
        return tirx.Cast(dtype, tvm.ir.Call(call.op, args, ret_ty=wide))
    if name == _RSQRT:
        root = tvm.ir.Call(_SQRT, [tirx.Cast(wide, call.args[0])], ret_ty=wide)
        return tirx.Cast(dtype, tirx.const(1.0, wide) / root)
    if name == _LDEXP:
        x, exponent = call.args
        exponent_dtype, _ = _split(_dtype(exponent))
        if exponent_dtype.startswith(("float", "bfloat")):
            exponent = tirx.Cast(_with_lanes("int32", lanes), exponent)
        widened = tvm.ir.Call(call.op, [tirx.Cast(wide, x), exponent], ret_ty=wide)
        return tirx.Cast(dtype, widened)
    if name == _NEXTAFTER:
        if lanes != 1:
            refused.append(f"T.nextafter on {dtype} vectors")
            return call
        x, y = call.args
        return half_next_after(x, y, scalar)
    return call


def widen_half_math(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with its fp16/bf16 math calls computed in float32 and rounded
    once (see the module).

    Raises:
        NotImplementedError: a math call it cannot compute (a vector ``nextafter``),
            named.
    """
    refused: list[str] = []

    def call(expr: Any) -> Any:
        op = expr.op
        if not isinstance(op, tvm.ir.Op) or str(op.name) == _REINTERPRET:
            return expr
        dtype = _dtype(expr)
        if not dtype or _split(dtype)[0] not in HALF_DTYPES:
            return expr
        return _widen_call(expr, dtype, refused)

    # Raised here, not in the callback: TVM's map would turn it into a RuntimeError.
    widened = tvm_ffi.structural_map(stmt, [(tvm.ir.Call, call)], order="post")
    if refused:
        raise NotImplementedError(
            f"{refused[0]} is not supported on target 'cuda': compute it in a serial "
            "(not vectorized) loop"
        )
    return widened


@dataclass(frozen=True)
class CudaWidenHalfMathPass(PrimFuncPass):
    """Compute fp16/bf16 math functions in float32 and round the result once."""

    name: ClassVar[str] = "cuda-widen-half-math"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its half-precision math calls widened."""
        return widen_half_math(body)
