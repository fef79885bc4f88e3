"""Scalar semantics of the reference interpreter (`tl_ir.interpret`): arithmetic,
integer wrapping at the dtype's width, bit operations (``>>`` arithmetic for signed
dtypes, logical for unsigned ones, up to 64 bits), casts and bit reinterpretation,
each as the C and LLVM targets compute them (the math calls: `tl_ir.interpret_math`).

Floats follow IEEE 754 at the expression's dtype: every ``+ - * /`` is computed in
float64 (exact enough that one rounding to a narrower dtype is the correctly rounded
result) and rounded once to its dtype; nothing raises: ``x / 0`` is inf/-inf/NaN.
Integers wrap to their width; division never traps: a divisor of 0 gives quotient 0
and remainder the dividend, a signed divisor of -1 gives quotient ``-a`` wrapped
(``MIN // -1 == MIN``) and remainder 0, as the CPU targets'
``cpu-integer-division-without-traps`` pass defines them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import tvm

from tl_ir.dtypes import numpy_dtype, rounded_constant

__all__ = [
    "ARITHMETIC",
    "BINARY",
    "BITWISE",
    "arithmetic",
    "bitwise",
    "cast_value",
    "dtype_of",
    "element_dtype",
    "int_width",
    "reinterpret_bits",
    "wrap",
]

#: Arithmetic nodes by TIR class name (see `arithmetic`).
ARITHMETIC = frozenset({"Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod"})

#: Min/max, comparison and logic nodes by TIR class name.
BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Min": lambda a, b: b if a != a else a if b != b else min(a, b),  # fmin: NaN ignored
    "Max": lambda a, b: b if a != a else a if b != b else max(a, b),  # fmax: NaN ignored
    "EQ": lambda a, b: a == b,
    "NE": lambda a, b: a != b,
    "LT": lambda a, b: a < b,
    "LE": lambda a, b: a <= b,
    "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b,
    "And": lambda a, b: bool(a) and bool(b),
    "Or": lambda a, b: bool(a) or bool(b),
}


#: Bit operation nodes by TIR class name (see `bitwise`).
BITWISE: dict[str, Callable[[int, int], int]] = {
    "BitwiseAnd": lambda a, b: a & b,
    "BitwiseOr": lambda a, b: a | b,
    "BitwiseXor": lambda a, b: a ^ b,
    "LShift": lambda a, b: a << b,
    "RShift": lambda a, b: a >> b,
}


def int_width(dtype: str) -> int | None:
    """The bit width of a scalar integer dtype (``int8`` ... ``uint64``); None otherwise."""
    if not dtype.startswith(("int", "uint")):
        return None
    parsed = tvm.DataType(dtype)
    return int(parsed.bits) if int(parsed.lanes) == 1 else None


def wrap(value: Any, dtype: str) -> Any:
    """``value`` reduced to ``dtype``'s range as two's complement (unsigned: modulo
    2**bits; signed: into [-2**(bits-1), 2**(bits-1))); non-integer dtypes unchanged."""
    width = int_width(dtype)
    if width is None or isinstance(value, float):
        return value
    value = int(value) & ((1 << width) - 1)
    if dtype.startswith("int") and value >= 1 << (width - 1):
        value -= 1 << width
    return value


def reinterpret_bits(value: Any, source: str, target: str) -> Any:
    """The bits of ``value`` (a ``source`` scalar) read as a ``target`` scalar."""
    bits = np.array(wrap(value, source), dtype=numpy_dtype(source))
    result = bits.view(numpy_dtype(target)).item()
    return float(result) if isinstance(result, float) else result


def dtype_of(expr: Any) -> str:
    """The dtype of an expression or a typed node, as a string ('' when it has none)."""
    dtype = getattr(expr, "dtype", None)
    if dtype is None:
        dtype = getattr(getattr(expr, "ty", None), "dtype", "")
    return str(dtype)


def bitwise(kind: str, a: Any, b: Any, dtype: str, where: Any = None) -> int:
    """``a <op> b`` of integer ``dtype`` for op ``kind`` (a key of `BITWISE`) on the
    operands' two's-complement bits: ``>>`` is arithmetic (sign-filling) for signed
    dtypes and logical for unsigned ones, at any width up to 64 bits; the result wraps
    to the dtype.

    Raises:
        NotImplementedError: ``dtype`` is not a scalar integer dtype.
        ValueError: a shift count outside ``[0, bits)`` (undefined in C and LLVM).
    """
    width = int_width(dtype)
    if width is None:
        raise NotImplementedError(f"interpret: {kind} of dtype {dtype} ({where})")
    a = wrap(a, dtype)
    if kind in ("LShift", "RShift"):
        count = int(b)
        if not 0 <= count < width:
            raise ValueError(
                f"interpret: shift by {count} of a {width}-bit {dtype} value is undefined "
                f"(expected 0 <= count < {width}) in {where}"
            )
        # a is in the dtype's range: Python's >> sign-fills a negative (signed) value
        # and shifts zeros into a non-negative one (every unsigned value).
        result: int = wrap(a << count if kind == "LShift" else a >> count, dtype)
        return result
    combined: int = wrap(BITWISE[kind](a, wrap(b, dtype)), dtype)
    return combined


_SCALAR_FLOATS = frozenset(
    {"float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2"}
)


def element_dtype(dtype: str) -> str:
    """The dtype of one lane of ``dtype`` (``"float32x4"`` -> ``"float32"``); a scalar
    dtype (or a name TVM does not parse) as it is."""
    if "x" not in dtype:
        return dtype
    try:
        parsed = tvm.DataType(dtype)
    except (ValueError, TypeError, RuntimeError):
        return dtype
    return str(parsed.with_lanes(1)) if int(parsed.lanes) > 1 else dtype


def arithmetic(kind: str, a: Any, b: Any, dtype: str) -> Any:
    """``a <op> b`` for ``kind`` in `ARITHMETIC` at scalar ``dtype``, as the CPU targets
    compute it (module docstring): floats rounded once to ``dtype`` (IEEE: no
    exception, ``x / 0`` is inf/-inf/NaN, ``Mod`` is C's ``fmod``, ``FloorDiv`` is
    ``floor(a / b)``); integers wrapped, with defined division by 0 and by -1."""
    if int_width(dtype) is not None:
        return _integer_arithmetic(kind, int(a), int(b), dtype)
    x, y = float(a), float(b)  # exact: the operands are values of the dtype
    if kind == "Add":  # Python's float + - * are IEEE double and never raise
        result = x + y
    elif kind == "Sub":
        result = x - y
    elif kind == "Mul":
        result = x * y
    elif kind == "Mod":  # C's fmod (math.fmod raises where C gives NaN)
        result = math.fmod(x, y) if y != 0 and not math.isinf(x) else _invalid(np.fmod, x, y)
    else:
        # TVM lowers a float floordiv/floormod to floor(a / b), a - floor(a / b) * b,
        # each operation rounded to the dtype.
        result = cast_value(_divide(x, y), dtype)
        if kind in ("FloorDiv", "FloorMod") and math.isfinite(result):
            result = float(math.floor(result))
        if kind == "FloorMod":
            result = x - cast_value(result * y, dtype)
    return cast_value(result, dtype)


def _divide(x: float, y: float) -> float:
    """IEEE division: ``x / 0`` is inf with the operands' combined sign, NaN for 0 / 0."""
    if y != 0:  # NaN included
        return x / y
    return _invalid(np.divide, x, y)


def _invalid(operation: Callable[[Any, Any], Any], x: float, y: float) -> float:
    """``operation`` on float64 scalars where Python would raise: the hardware's result
    (the sign of its NaN included), warnings silenced."""
    with np.errstate(all="ignore"):
        return float(operation(np.float64(x), np.float64(y)))


def _integer_arithmetic(kind: str, a: int, b: int, dtype: str) -> int:
    if kind == "Add":
        return int(wrap(a + b, dtype))
    if kind == "Sub":
        return int(wrap(a - b, dtype))
    if kind == "Mul":
        return int(wrap(a * b, dtype))
    quotient = kind in ("Div", "FloorDiv")
    if b == 0:  # the targets' defined result: q * b + r == a still holds
        return 0 if quotient else int(wrap(a, dtype))
    if b == -1 and dtype.startswith("int"):  # MIN // -1 wraps to MIN
        return int(wrap(-a, dtype)) if quotient else 0
    if kind in ("FloorDiv", "FloorMod"):
        return int(wrap(a // b if quotient else a % b, dtype))
    # C's division truncates toward zero; exact for 64-bit values.
    truncated = abs(a) // abs(b)
    truncated = truncated if (a < 0) == (b < 0) else -truncated
    return int(wrap(truncated if quotient else a - truncated * b, dtype))


def cast_value(value: Any, dtype: str) -> Any:
    """``value`` converted to ``dtype`` as the targets convert: integers wrap, floats
    round to the dtype's precision (to nearest, ties to even), a float to an integer
    type truncates and saturates (NaN gives 0), bool is truthiness.

    An integer converts to float64 and float32 with one rounding (C's conversion); to
    the narrower floats through float32, as the CPU targets convert it (an int64 near a
    bfloat16 tie may round twice, there as here)."""
    if dtype == "bool":
        return bool(value)
    if "int" in dtype:
        if isinstance(value, float | np.floating):
            return _saturated(float(value), dtype)
        return wrap(int(value), dtype)
    if dtype in _SCALAR_FLOATS:
        if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
            if dtype == "float64":
                return float(int(value))
            value = _int_to_float32(int(value))
        return rounded_constant(float(value), dtype)
    return value


def converted(values: Any, dtype: Any) -> np.ndarray[Any, Any]:
    """The array ``values`` converted to the numpy ``dtype`` as the targets convert
    element by element: a float to an integer type truncates and saturates (NaN gives
    0; `_saturated`), everything else as numpy's ``astype``."""
    values = np.asarray(values)
    target = np.dtype(dtype)
    is_float = values.dtype.kind == "f" or str(values.dtype) == "bfloat16"
    if not is_float or target.kind not in "iu":
        plain: np.ndarray[Any, Any] = values.astype(target)
        return plain
    wide = values.astype(np.float64)
    info = np.iinfo(target)
    with np.errstate(invalid="ignore"):
        out = np.where(np.isnan(wide), 0.0, np.trunc(wide))
        # Compare in float64: MAX + 1 is a power of two, exact there.
        too_big = out >= float(info.max) + 1.0
        too_small = out < float(info.min)
        inside = np.clip(out, float(info.min), float(info.max))
    result = inside.astype(target)
    result[too_big] = info.max
    result[too_small] = info.min
    return result


def _saturated(value: float, dtype: str) -> int:
    """A float converted to the integer ``dtype`` as GPUs convert it (PTX ``cvt.rzi``)
    and the CPU targets do (`cpu-saturate-float-to-int`): truncated toward zero,
    clamped to the type's range, NaN giving 0."""
    if math.isnan(value):
        return 0
    width = int_width(dtype) or 32
    low, high = (-(1 << (width - 1)), (1 << (width - 1)) - 1)
    if dtype.startswith("uint"):
        low, high = 0, (1 << width) - 1
    if value >= high + 1:
        return high
    if value < low:
        return low
    return int(value)


def _int_to_float32(value: int) -> float:
    """``value`` rounded once to float32 (to nearest, ties to even; inf past its range),
    as a Python float: ``float(value)`` would round to float64 first."""
    magnitude = abs(value)
    excess = magnitude.bit_length() - 24
    if excess > 0:
        kept, dropped = magnitude >> excess, magnitude & ((1 << excess) - 1)
        half = 1 << (excess - 1)
        if dropped > half or (dropped == half and kept & 1):
            kept += 1
        magnitude = kept << excess
    try:
        exact = float(magnitude)  # at most 24 significant bits: exact
    except OverflowError:
        exact = math.inf
    if exact >= 2.0**128:
        exact = math.inf
    return -exact if value < 0 else exact
