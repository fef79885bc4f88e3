"""`cpu-legalize-intrinsics`: math intrinsics a CPU code generator cannot print, or
prints inaccurately, rewritten.

On ``c``, TVM 0.27's C printer has no rule for ``fabs`` (``T.abs`` on floats, used
by ``reduce_abssum``/``reduce_absmax``), ``exp2``, ``exp10``, ``fmod``, ``fma``,
``popcount``, ``clz`` nor ``assume`` (it fails with "Unresolved call"). They become:
``abs(x)`` -> ``x`` with its sign bit cleared; ``exp2``/``fmod``/``fma`` -> the libm
function (``exp2f``/``fmodf``/``fmaf`` for float32; ``exp(x * ln 2)`` was 600 ulp off
for float64 ``x`` near 1000); ``exp10(x)`` -> libm's ``pow(10, x)`` (``exp(x * ln 10)``
was up to 67 ulp off in float32, 900 in float64; ``exp10`` is a GNU extension
``math.h`` does not declare by default); ``popcount``/``clz`` -> gcc's
``__builtin_popcount``/``__builtin_clz`` (``ll`` for 64 bits) of the operand's bits
zero-extended, with ``clz(0)`` the operand's width; ``T.assume(cond)`` (an optimizer
hint) -> nothing.

On ``llvm``, TVM's LLVM code generator has no rule for ``fmod``, for a vector
``sinh``/``cosh`` (a ``T.Parallel`` loop) nor for a ``clz`` of fewer than 32 bits, and
its rules for ``tanh``, ``atanh`` and ``exp10`` lose precision (``tanh(2**-30)``
was 0; ``exp10`` is ``exp(x * ln 10)``: up to 67 ulp in float32, 3e-12 relative error
in float64). They
become: ``fmod(a, b)`` -> the float remainder ``a % b`` (LLVM's ``frem``, which is C's
``fmod``; it vectorizes); ``sinh``/``cosh`` -> libm's ``sinhf``/``coshf`` (one call per
vector lane, as TVM already does for ``erf``); ``tanh``/``atanh`` -> the formulas of
`accurate_tanh`/`accurate_atanh` (a few ulp; still vectorized); ``exp10`` ->
``pow(10, x)`` (libm's, one call per vector lane: accuracy over speed for a rare
function); ``clz`` -> ``x == 0 ? width : clz(x)`` (TVM asks LLVM for a ``ctlz``
undefined at 0), narrower operands counted zero-extended to 32 bits. float32 ``exp10``
is left to TVM's rule (``exp(x * ln 10)``, up to 67 ulp off for ``|x|`` near 38).

On both targets: a half-precision ``ldexp(x, e)`` (which `cpu-legalize-half-precision`
leaves alone: its operands' types differ, and both code generators then refuse it) is
computed on ``x`` widened to float32 (exact) and rounded once; a ``nextafter`` of two
float16 values, which `cpu-legalize-half-precision` widened to float32 (where the step
is far below a float16 ulp, so the rounded result was ``x``), steps one float16 ulp
(`float16_next_after`). A float8 ``ldexp`` raises NotImplementedError (its conversions
were lowered by `cpu-legalize-float8`, which runs earlier).

Only scalar calls are rewritten (the pass runs before TVM's vectorizer); half-precision
math is widened to float32 earlier by `cpu-legalize-half-precision`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.math_functions import (
    LIBM_FLOAT_DTYPES,
    accurate_atanh,
    accurate_tanh,
    clear_sign,
    count_leading_zeros,
    float16_next_after,
    integer_bits,
    libm_call,
    population_count,
)
from tl_codegen_cpu.passes.round_bfloat16 import round_to_bfloat16
from tl_passes.pass_base import PassContext, PrimFuncPass

#: Target kinds whose code generator needs a rewrite (each has its own rules).
DEFAULT_KINDS: tuple[str, ...] = ("c", "llvm")

#: Half-precision dtypes whose ``ldexp`` is computed in float32.
_HALF_LDEXP = ("float16", "bfloat16")


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


def _op_name(call: Any) -> str:
    op = call.op
    return str(op.name) if isinstance(op, tvm.ir.Op) else ""


def _exp10(x: Any, dtype: str) -> Any:
    # pow(10, x): libm's pow is within an ulp; exp(x * ln 10) inherits the rounding
    # error of x * ln 10 times |x * ln 10| (hundreds of ulp for float64 x = 300).
    return tirx.pow(tirx.const(10.0, dtype), x)


def _half_ldexp(call: Any, kind: str) -> Any:
    """``ldexp`` of a half-precision ``x``: on ``x`` widened to float32 (exact), rounded
    once to the half type. For float16 the float32 result is exact (float32's range
    holds every float16 result and its rounding boundaries); for bfloat16, whose range
    is float32's, a result in float32's subnormal range is rounded twice (by ``ldexpf``,
    then to bfloat16)."""
    x, exponent = call.args
    dtype = _dtype(call)
    if dtype not in _HALF_LDEXP:
        raise NotImplementedError(
            f"T.ldexp on {dtype} is not supported on target {kind!r}: "
            "widen the operand to float32 (T.cast) first"
        )
    wide = tvm.ir.Call(call.op, [tirx.Cast("float32", x), exponent], ret_ty="float32")
    if dtype == "bfloat16":
        # `cpu-round-bfloat16` has run: a conversion to bfloat16 must round itself.
        return tirx.Cast(dtype, round_to_bfloat16(wide))
    return tirx.Cast(dtype, wide)


def _widened_float16(arg: Any) -> bool:
    """Whether ``arg`` is what `cpu-legalize-half-precision` makes of a float16 operand:
    ``Cast(float32, v)`` of a float16 ``v`` (or of an integer it proved exact in
    float16)."""
    if not isinstance(arg, tirx.Cast) or _dtype(arg) != "float32":
        return False
    source = _dtype(arg.value)
    return source == "float16" or integer_bits(source) is not None


def _rewrite_cast(cast: Any) -> Any:
    """``Cast(float16, nextafter(a, b))`` of widened float16 operands: the float16
    ``nextafter`` (see the module)."""
    value = cast.value
    if _dtype(cast) != "float16" or not isinstance(value, tvm.ir.Call):
        return cast
    if _op_name(value) != "tirx.nextafter" or _dtype(value) != "float32":
        return cast
    if not all(_widened_float16(arg) for arg in value.args):
        return cast
    a, b = value.args
    return tirx.Cast("float16", float16_next_after(a, b))


#: Rule: (the call, its result dtype, the target kind) -> its replacement, or the
#: call itself when the rule does not apply to it.
_Rule = Callable[[Any, str, str], Any]


def _unary_float(rewrite: Callable[[Any, str], Any], dtypes: tuple[str, ...]) -> _Rule:
    def rule(call: Any, dtype: str, kind: str) -> Any:
        return rewrite(call.args[0], dtype) if dtype in dtypes else call

    return rule


def _libm(function: str) -> _Rule:
    def rule(call: Any, dtype: str, kind: str) -> Any:
        if dtype not in LIBM_FLOAT_DTYPES:
            return call
        return libm_call(function, dtype, *call.args)

    return rule


def _integer(rewrite: Callable[[Any, str], Any]) -> _Rule:
    def rule(call: Any, dtype: str, kind: str) -> Any:
        (x,) = call.args
        return call if integer_bits(_dtype(x)) is None else rewrite(x, dtype)

    return rule


def _assume(call: Any, dtype: str, kind: str) -> Any:
    return tirx.const(0, "int32")  # a hint to the optimizer: nothing to compute


def _absolute(call: Any, dtype: str, kind: str) -> Any:
    return clear_sign(call.args[0], dtype)


def _exp2(call: Any, dtype: str, kind: str) -> Any:
    # fp32 exp2 normally never gets here (`cpu-vectorize-exp` wrote it out); libm's
    # exp2 is exact where exp(x * ln 2) is not (hundreds of ulp for float64 x = 1000).
    if dtype in LIBM_FLOAT_DTYPES:
        return libm_call("exp2", dtype, call.args[0])
    return tirx.exp(call.args[0] * tirx.const(math.log(2.0), dtype))


def _exp10_c(call: Any, dtype: str, kind: str) -> Any:
    if dtype in LIBM_FLOAT_DTYPES:
        return _exp10(call.args[0], dtype)
    return tirx.exp(call.args[0] * tirx.const(math.log(10.0), dtype))


def _float_remainder(call: Any, dtype: str, kind: str) -> Any:
    # LLVM's frem is C's fmod (exact, sign of the dividend); it vectorizes.
    a, b = call.args
    return tirx.Mod(a, b) if dtype in LIBM_FLOAT_DTYPES else call


def _ldexp(call: Any, dtype: str, kind: str) -> Any:
    if dtype in ("float32", "float64") or len(call.args) != 2:
        return call  # TVM's own rule (ldexpf / ldexp)
    return _half_ldexp(call, kind)


def _guarded_clz(call: Any, dtype: str, kind: str) -> Any:
    # TVM's ctlz: only 32/64-bit operands, and undefined (LLVM poison) at 0.
    (x,) = call.args
    if integer_bits(_dtype(x)) is None:
        return call

    def ctlz(value: Any) -> Any:
        return tvm.ir.Call(call.op, [value], ret_ty="int32")

    return count_leading_zeros(x, dtype, ctlz)


_FLOAT = ("float32", "float64")

#: Target kind -> op name -> rule.
RULES: dict[str, dict[str, _Rule]] = {
    "c": {
        "tirx.fabs": _absolute,
        "tirx.assume": _assume,
        "tirx.exp2": _exp2,
        "tirx.exp10": _exp10_c,
        "tirx.fmod": _libm("fmod"),
        "tirx.fma": _libm("fma"),
        "tirx.popcount": _integer(population_count),
        "prim.clz": _integer(count_leading_zeros),
        "tirx.ldexp": _ldexp,
    },
    "llvm": {
        "tirx.fmod": _float_remainder,
        "tirx.sinh": _libm("sinh"),
        "tirx.cosh": _libm("cosh"),
        "tirx.tanh": _unary_float(accurate_tanh, _FLOAT),
        "tirx.atanh": _unary_float(accurate_atanh, _FLOAT),
        "tirx.exp10": _unary_float(_exp10, _FLOAT),
        "prim.clz": _guarded_clz,
        "tirx.ldexp": _ldexp,
    },
}


def legalize_intrinsics(stmt: tirx.Stmt, kind: str = "c") -> tirx.Stmt:
    """Return ``stmt`` with the intrinsic calls target ``kind`` (``"c"`` or ``"llvm"``)
    cannot print, or prints inaccurately, rewritten (see the module); an unknown kind
    gets the ``c`` rules, which only use what every target prints.

    Raises:
        NotImplementedError: an intrinsic no rule can give a correct result for
            (``T.ldexp`` on a float8 type), naming the function, dtype and target.
    """
    rules = RULES.get(kind, RULES["c"])
    refused: list[NotImplementedError] = []

    def rewrite_call(call: Any) -> Any:
        rule = rules.get(_op_name(call))
        if rule is None or not call.args:
            return call
        try:
            return rule(call, _dtype(call), kind)
        except NotImplementedError as error:
            # Raised after the map: an exception crossing TVM's FFI becomes a RuntimeError.
            refused.append(error)
            return call

    result = tvm_ffi.structural_map(
        stmt, [(tvm.ir.Call, rewrite_call), (tirx.Cast, _rewrite_cast)], order="post"
    )
    if refused:
        raise refused[0]
    return result


@dataclass(frozen=True)
class CpuLegalizeIntrinsicsPass(PrimFuncPass):
    """Rewrite intrinsics the target's code generator cannot print, or prints inaccurately.

    Args:
        kinds: the target kinds the rewrite applies to (others are left alone;
            a run without a target applies the ``c`` rules).
    """

    name: ClassVar[str] = "cpu-legalize-intrinsics"
    kinds: tuple[str, ...] = DEFAULT_KINDS

    def applies_to(self, ctx: PassContext) -> bool:
        """Return whether ``ctx``'s target kind is one of `kinds` (or no target is set)."""
        return ctx.target is None or str(ctx.target.kind.name) in self.kinds

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with the intrinsics rewritten for ``ctx``'s target kind."""
        kind = "c" if ctx.target is None else str(ctx.target.kind.name)
        return legalize_intrinsics(body, kind)
