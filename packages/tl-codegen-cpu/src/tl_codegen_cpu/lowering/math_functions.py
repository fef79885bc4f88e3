"""Math functions written as TIR both CPU code generators print (`cpu-legalize-intrinsics`).

Each helper takes scalar expressions and returns a scalar expression of the same
meaning as the C99 / numpy function it is named after, built only from what
TVM's C printer and its LLVM code generator both accept: arithmetic, selects,
bit casts (``reinterpret``), ``exp``/``log`` (LLVM intrinsics on ``llvm``) and
calls of libm or gcc builtins by name (``call_pure_extern``; TVM's vectorizer
splits such a call into one scalar call per lane, and the symbol check of
``build_llvm`` finds libm's functions).

Where a formula replaces a libm function (``tanh``, ``atanh``: TVM's own LLVM
rules lose all precision near 0), it is the one of Kahan's "expm1 / log1p
without the function" trick: with ``u = exp(y)`` rounded, ``(u - 1) * y / log(u)``
is ``expm1(y)`` to a few ulp, since ``u - 1`` is exact and ``log(u)`` is the
argument ``u`` really is the exponential of; likewise ``log(w) * z / (w - 1)``
with ``w = 1 + z`` is ``log1p(z)``. Both vectorize (``exp``, ``log``, selects).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Any

from tvm import tirx

from tl_codegen_cpu.lowering.let_bindings import bind_computed

__all__ = [
    "LIBM_FLOAT_DTYPES",
    "accurate_atanh",
    "accurate_tanh",
    "bfloat16_next_after",
    "clear_sign",
    "count_leading_zeros",
    "float16_next_after",
    "integer_bits",
    "libm_call",
    "population_count",
]

#: Float dtype -> the suffix of its libm functions (``fmodf`` / ``fmod``).
LIBM_FLOAT_DTYPES: dict[str, str] = {"float32": "f", "float64": ""}

#: Float dtype -> (the signed integer type of its bits, its largest value: every bit
#: but the sign bit; its complement is the sign bit).
_SIGN_BIT: dict[str, tuple[str, int]] = {
    "float32": ("int32", (1 << 31) - 1),
    "float64": ("int64", (1 << 63) - 1),
}

#: Float dtype -> the `struct` codes of its value and of its bits as a signed integer.
_STRUCT_CODES: dict[str, tuple[str, str]] = {"float32": ("<f", "<i"), "float64": ("<d", "<q")}

#: Float dtype -> the bits of its +inf.
_INFINITY_BITS: dict[str, int] = {"float32": 0x7F800000, "float64": 0x7FF0000000000000}

#: Float dtype -> the largest ``exp(y)`` below which ``exp(y) - 1`` rounds to -1 (half
#: an ulp of the numbers just below 1).
_MINUS_ONE_BELOW: dict[str, float] = {"float32": 2.0**-25, "float64": 2.0**-54}


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


def libm_call(function: str, dtype: str, *args: Any) -> Any:
    """A call of libm's ``function`` for ``dtype`` (``fmodf`` for float32, ``fmod``
    for float64) on ``args``.

    Raises:
        ValueError: ``dtype`` is not float32 or float64.
    """
    if dtype not in LIBM_FLOAT_DTYPES:
        raise ValueError(f"libm_call: no libm {function} for {dtype}")
    return tirx.call_pure_extern(dtype, function + LIBM_FLOAT_DTYPES[dtype], *args)


def clear_sign(x: Any, dtype: str) -> Any:
    """``|x|`` with the sign bit cleared: ``|-0.0|`` is ``+0.0`` and NaN stays NaN
    (a select ``x < 0 ? -x : x`` keeps ``-0.0``). Dtypes other than float32 and
    float64 get the select."""
    if dtype not in _SIGN_BIT:
        return tirx.Select(x < tirx.const(0, dtype), -x, x)
    bits, magnitude_mask = _SIGN_BIT[dtype]
    cleared = tirx.bitwise_and(tirx.reinterpret(bits, x), tirx.const(magnitude_mask, bits))
    return tirx.reinterpret(dtype, cleared)


def _with_sign_of(magnitude: Any, x: Any, dtype: str) -> Any:
    """``copysign(magnitude, x)`` for a ``magnitude`` whose sign bit is clear, on the
    bits (a select or ``x * 0`` would not give ``-0.0``; TVM folds ``x * 0`` to 0)."""
    bits, magnitude_mask = _SIGN_BIT[dtype]
    sign_of_x = tirx.bitwise_and(tirx.reinterpret(bits, x), tirx.const(~magnitude_mask, bits))
    if isinstance(magnitude, tirx.FloatImm):
        # A constant's bits, computed here: TVM's LLVM code generator refuses a
        # reinterpret of a zero constant.
        float_code, int_code = _STRUCT_CODES[dtype]
        (value,) = struct.unpack(int_code, struct.pack(float_code, float(magnitude.value)))
        magnitude_bits = tirx.const(value, bits)
    else:
        magnitude_bits = tirx.reinterpret(bits, magnitude)
    return tirx.reinterpret(dtype, tirx.bitwise_or(magnitude_bits, sign_of_x))


def _is_infinite(x: Any, dtype: str) -> Any:
    """``isinf(x)`` on the bits (``tirx.isinf`` emits ``fabs``, which the C printer
    cannot print and which this rewrite runs too late to legalize)."""
    bits, magnitude_mask = _SIGN_BIT[dtype]
    cleared = tirx.bitwise_and(tirx.reinterpret(bits, x), tirx.const(magnitude_mask, bits))
    return cleared == tirx.const(_INFINITY_BITS[dtype], bits)


def _is_plus_infinity(x: Any, dtype: str) -> Any:
    """``x == +inf``, on the bits (see `_is_infinite`)."""
    bits, _ = _SIGN_BIT[dtype]
    return tirx.reinterpret(bits, x) == tirx.const(_INFINITY_BITS[dtype], bits)


def _expm1(u: Any, y: Any, dtype: str) -> Any:
    """``expm1(y)`` for ``y <= 0`` from ``u = exp(y)`` (Kahan: ``(u - 1) * y / log(u)``)."""
    one = tirx.const(1, dtype)
    minus_one = u - one  # exact: Sterbenz for u >= 1/2, no cancellation below
    return tirx.Select(
        u == one,
        y,  # |y| below half an ulp of 1: expm1(y) rounds to y
        tirx.Select(
            # exp(y) - 1 rounds to -1 (and y = -inf): tested on u, since log(u) of a
            # subnormal or zero u is no longer the argument it rounds
            u < tirx.const(_MINUS_ONE_BELOW[dtype], dtype),
            tirx.const(-1, dtype),
            minus_one * y / tirx.log(u),
        ),
    )


#: Above this ``|x|``, ``tanh`` is ``1 - 2u / (1 + u)`` (``u = exp(-2|x|)``): the error
#: of ``expm1`` grows as it nears -1, that of ``2u / (1 + u)`` shrinks as it nears 0.
TANH_LARGE = 0.625


def accurate_tanh(x: Any, dtype: str) -> Any:
    """``tanh(x)`` within a few ulp for float32/float64 ``x``, vectorizable.

    With ``a = |x|`` and ``u = exp(-2a)``: below `TANH_LARGE`, ``tanh(a) = -t / (t +
    2)`` with ``t = expm1(-2a)`` in ``(-1, 0]`` (Kahan's, from ``u``; no cancellation,
    and ``t = -2a`` for tiny ``a``); above, ``1 - 2u / (1 + u)`` (1 once ``u``
    underflows). Then the sign of ``x`` is put back (``tanh(-0.0)`` is ``-0.0``; NaN
    stays NaN). TVM's LLVM rule ``(1 - e^-2x) / (1 + e^-2x)`` cancels near 0: it gave
    0 for ``x = 2**-30`` and was 1% off at 1e-6.
    """
    one = tirx.const(1, dtype)
    two = tirx.const(2, dtype)

    def of(v: Any) -> Any:
        def magnitude(a: Any) -> Any:
            y = tirx.const(-2, dtype) * a

            def both(u: Any) -> Any:
                def near_zero(t: Any) -> Any:
                    return -t / (t + two)

                small = bind_computed(_expm1(u, y, dtype), "expm1_2x", near_zero)
                large = one - two * u / (one + u)
                return tirx.Select(a < tirx.const(TANH_LARGE, dtype), small, large)

            return bind_computed(tirx.exp(y), "exp_2x", both)

        return _with_sign_of(bind_computed(clear_sign(v, dtype), "abs_x", magnitude), v, dtype)

    return bind_computed(x, "tanh_x", of)


def accurate_atanh(x: Any, dtype: str) -> Any:
    """``atanh(x)`` within a few ulp for float32/float64 ``x``, vectorizable.

    glibc's formula on ``a = |x|``: ``atanh(a) = log1p(z) / 2`` with ``z = 2a +
    2a^2 / (1 - a)`` below 1/2 (its main term ``2a`` exact) and ``z = 2a / (1 - a)``
    above (``1 - a`` exact), ``log1p`` by Kahan's trick; then the sign of ``x``.
    ``atanh(±1)`` is ``±inf``, ``|x| > 1`` and NaN give NaN. TVM's LLVM rule
    ``log((1 + x) / (1 - x)) / 2`` returns 0 for ``x = 2**-30``.
    """
    one = tirx.const(1, dtype)
    two = tirx.const(2, dtype)

    def of(v: Any) -> Any:
        def magnitude(a: Any) -> Any:
            def log1p(z: Any) -> Any:
                def kahan(w: Any) -> Any:
                    return tirx.Select(
                        w == one,
                        z,  # z below half an ulp of 1: log1p(z) rounds to z
                        # z = +inf (|x| = 1) gives +inf, where the ratio is inf / inf;
                        # z = -inf (|x| so large that 2|x| overflows) gives NaN
                        tirx.Select(_is_plus_infinity(w, dtype), w, tirx.log(w) * z / (w - one)),
                    )

                return bind_computed(one + z, "one_plus_z", kahan)

            def half_log1p(complement: Any) -> Any:
                small = two * a + two * a * a / complement
                large = two * a / complement
                z = tirx.Select(a < tirx.const(0.5, dtype), small, large)
                return tirx.const(0.5, dtype) * bind_computed(z, "atanh_z", log1p)

            return bind_computed(one - a, "one_minus_x", half_log1p)

        return _with_sign_of(bind_computed(clear_sign(v, dtype), "abs_x", magnitude), v, dtype)

    return bind_computed(x, "atanh_x", of)


def float16_next_after(x: Any, y: Any) -> Any:
    """``nextafter`` of two float16 values given as float32, as float32: the float16
    next to ``x`` in the direction of ``y`` (exact, so its cast to float16 is too).

    Computing ``nextafter`` in float32 and rounding gives ``x`` back. Here: NaN in,
    NaN out; ``x == y`` gives ``x`` (numpy's float16 rule; C's ``nextafter`` gives ``y``,
    which differs for ``(-0.0, 0.0)`` only); within the subnormal float16 range (``|x| <
    2**-14``, or ``|x| = 2**-14`` stepping toward 0) the step is ``2**-24`` (exact
    float32 arithmetic; a zero result keeps the sign of ``x``); above, the float16
    values are the float32 bit patterns whose 13 low bits are clear, so the step is
    ``±2**13`` on the float32 bits (65504 steps up to 65536, which rounds to inf);
    from ``±inf`` the step is to ``±65504``.
    """
    f32 = "float32"

    def of(a: Any) -> Any:
        def toward(b: Any) -> Any:
            up = b > a
            magnitude = clear_sign(a, f32)
            zero = tirx.const(0, f32)
            # (not an EQ of the two conditions: TVM's LLVM code generator compares
            # booleans with a float comparison)
            away_from_zero = tirx.Or(tirx.And(up, a > zero), tirx.And(tirx.Not(up), a < zero))
            subnormal_step = tirx.Or(
                magnitude < tirx.const(2.0**-14, f32),
                tirx.And(magnitude == tirx.const(2.0**-14, f32), tirx.Not(away_from_zero)),
            )
            tiny = tirx.const(2.0**-24, f32)
            stepped = a + tirx.Select(up, tiny, -tiny)
            signed_zero = _with_sign_of(tirx.const(0.0, f32), a, f32)
            small = tirx.Select(stepped == zero, signed_zero, stepped)
            # unsigned: wrapping is defined (the bits of a NaN may be the largest int32)
            step = tirx.Select(
                away_from_zero,
                tirx.const(1 << 13, "uint32"),
                tirx.const((1 << 32) - (1 << 13), "uint32"),
            )
            large = tirx.reinterpret(f32, tirx.reinterpret("uint32", a) + step)
            from_inf = _with_sign_of(tirx.const(65504.0, f32), a, f32)
            normal = tirx.Select(_is_infinite(a, f32), from_inf, large)
            moved = tirx.Select(subnormal_step, small, normal)
            unordered = tirx.Or(tirx.isnan(a), tirx.isnan(b))
            # x == y gives x, as numpy's float16 nextafter (C's gives y: they differ on
            # the sign of a zero only)
            return tirx.Select(unordered, a + b, tirx.Select(a == b, a, moved))

        return bind_computed(y, "nextafter_y", toward)

    return bind_computed(x, "nextafter_x", of)


def bfloat16_next_after(x: Any, y: Any) -> Any:
    """``nextafter`` of two bfloat16 values given as float32, as float32: the bfloat16
    next to ``x`` in the direction of ``y`` (exact, so its conversion to bfloat16 is too).

    A bfloat16 value is the top half of a float32 with the same exponent range, so a
    step is ``±2**16`` on the float32 bits, through the subnormals, from the largest
    finite value to inf and back; only a zero needs its own step (to ``±2**-133``, the
    smallest bfloat16 subnormal). NaN in, NaN out; ``x == y`` gives ``y`` (C's rule, as
    ml_dtypes and torch; numpy's float16 rule, `float16_next_after`'s, gives ``x``: they
    differ on the sign of a zero only); a zero result keeps the sign of ``x``.
    """
    f32 = "float32"

    def of(a: Any) -> Any:
        def toward(b: Any) -> Any:
            up = b > a
            zero = tirx.const(0, f32)
            away_from_zero = tirx.Or(tirx.And(up, a > zero), tirx.And(tirx.Not(up), a < zero))
            # unsigned: wrapping is defined
            step = tirx.Select(
                away_from_zero,
                tirx.const(1 << 16, "uint32"),
                tirx.const((1 << 32) - (1 << 16), "uint32"),
            )
            stepped = tirx.reinterpret(f32, tirx.reinterpret("uint32", a) + step)
            smallest = tirx.const(2.0**-133, f32)
            from_zero = tirx.Select(up, smallest, -smallest)
            moved = tirx.Select(a == zero, from_zero, stepped)
            unordered = tirx.Or(tirx.isnan(a), tirx.isnan(b))
            return tirx.Select(unordered, a + b, tirx.Select(a == b, b, moved))

        return bind_computed(y, "nextafter_y", toward)

    return bind_computed(x, "nextafter_x", of)


_INTEGER = re.compile(r"u?int(8|16|32|64)")


def integer_bits(dtype: str) -> int | None:
    """The width of the scalar integer ``dtype`` (``int8`` ... ``uint64``), else None."""
    match = _INTEGER.fullmatch(dtype)
    return None if match is None else int(match.group(1))


def _counted_bits(x: Any, bits: int) -> Any:
    """``x`` as the 32- or 64-bit operand a bit count reads: itself for 32 and 64 bits
    (C converts a negative value to the unsigned type of the builtins modulo 2**n, and
    LLVM counts the bits), zero-extended to int32 below (C would sign-extend it).

    No cast to an unsigned type and no ``reinterpret``: TVM folds a cast of a negative
    constant to unsigned into an error, and its LLVM code generator refuses a
    ``reinterpret`` of the constant 0."""
    if bits in (32, 64):
        return x
    return tirx.bitwise_and(tirx.Cast("int32", x), tirx.const((1 << bits) - 1, "int32"))


def population_count(x: Any, result_dtype: str) -> Any:
    """``popcount(x)`` of an integer ``x`` of 8 to 64 bits, by gcc's builtins, as
    ``result_dtype``.

    Raises:
        ValueError: ``x`` is not such an integer.
    """
    bits = integer_bits(_dtype(x))
    if bits is None:
        raise ValueError(f"population_count: not an integer dtype: {_dtype(x)}")
    builtin = "__builtin_popcountll" if bits == 64 else "__builtin_popcount"
    counted = tirx.call_pure_extern("int32", builtin, _counted_bits(x, bits))
    return tirx.Cast(result_dtype, counted)


def _gcc_count_leading_zeros(value: Any) -> Any:
    builtin = "__builtin_clzll" if _dtype(value).endswith("64") else "__builtin_clz"
    return tirx.call_pure_extern("int32", builtin, value)


def count_leading_zeros(
    x: Any, result_dtype: str, count: Callable[[Any], Any] = _gcc_count_leading_zeros
) -> Any:
    """``clz(x)`` of an integer ``x`` of 8 to 64 bits, as ``result_dtype``; ``clz(0)``
    is the width of ``x``.

    Args:
        x: the operand.
        result_dtype: the dtype of the result.
        count: builds the (int32) count of a nonzero 32- or 64-bit operand:
            gcc's ``__builtin_clz``/``__builtin_clzll`` by default, undefined at 0 like
            LLVM's ``ctlz`` as TVM asks for it (hence the select). A narrower ``x``
            is counted zero-extended to 32 bits, less the extension.

    Raises:
        ValueError: ``x`` is not such an integer.
    """
    bits = integer_bits(_dtype(x))
    if bits is None:
        raise ValueError(f"count_leading_zeros: not an integer dtype: {_dtype(x)}")
    container = 64 if bits == 64 else 32

    def of(value: Any) -> Any:
        zero = tirx.const(0, _dtype(value))
        leading = tirx.Select(value == zero, tirx.const(container, "int32"), count(value))
        if container != bits:
            leading = leading - tirx.const(container - bits, "int32")
        return tirx.Cast(result_dtype, leading)

    return bind_computed(_counted_bits(x, bits), "clz_bits", of)
