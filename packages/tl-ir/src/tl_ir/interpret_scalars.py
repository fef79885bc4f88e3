"""Scalar semantics of the reference interpreter (`tl_ir.interpret`): the math calls,
binary operators, integer wrapping at the dtype's width, bit operations (``>>``
arithmetic for signed dtypes, logical for unsigned ones, up to 64 bits), casts and
bit reinterpretation, each as the C and LLVM targets compute them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tvm

from tl_ir.dtypes import numpy_dtype, rounded_constant

__all__ = [
    "BINARY",
    "BITWISE",
    "UNARY",
    "bitwise",
    "cast_value",
    "dtype_of",
    "int_width",
    "reinterpret_bits",
    "wrap",
]

#: Math calls by short name (``tirx.exp`` -> ``exp``), computed in float64.
UNARY: dict[str, Callable[[Any], Any]] = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "fabs": np.abs,
    "abs": np.abs,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "sin": np.sin,
    "cos": np.cos,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "nearbyint": np.round,
}

#: Arithmetic and comparison nodes by TIR class name.
BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
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
    "FloorDiv": lambda a, b: a // b,
    "FloorMod": lambda a, b: a % b,
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


def cast_value(value: Any, dtype: str) -> Any:
    """``value`` converted to ``dtype`` as the targets convert: integers wrap, floats
    round to the dtype's precision, bool is truthiness."""
    if dtype == "bool":
        return bool(value)
    if "int" in dtype:
        return wrap(int(value), dtype)
    if dtype in _SCALAR_FLOATS:
        return rounded_constant(float(value), dtype)
    return value
