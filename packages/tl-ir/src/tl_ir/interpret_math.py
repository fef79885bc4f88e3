"""The math calls of the reference interpreter (`tl_ir.interpret`): ``T.exp``,
``T.fmod``, ``T.isnan``, ``T.copysign``, ``T.clz``... by their op's short name, each
computed as the CPU targets compute it.

A float call is computed at its *math dtype* and rounded to its own dtype: float64
calls in float64, every narrower float (float32, float16, bfloat16, float8) in
float32, as the CPU targets widen half-precision math (``cpu-legalize-half-precision``).
A function is evaluated in float64 with numpy (no exception: a domain error is NaN,
an overflow inf) and rounded to the math dtype; ``rsqrt`` and ``sigmoid`` are the
targets' ``1 / sqrt(x)`` and ``1 / (1 + exp(-x))``, each step rounded; ``nextafter``
steps to the neighbour in the result's own dtype (bfloat16 included). Exactly rounded
operations (``sqrt``, ``fmod``, ``copysign``, ``ldexp``, ``floor``...) agree with the
targets bit for bit; the transcendental ones are correctly rounded here (up to a rare
double rounding), where the targets call the C library's ``expf``/``log10f``...,
which may differ from it by an ulp or two (and from each other: c and llvm).
``fma`` is ``a * b + c`` rounded once to the math dtype (C's ``fmaf``/``fma``).
Integer calls (``clz``, ``popcount``) work on the operand's two's-complement bits at
its width; ``clz(0)`` is the width.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from tl_ir.dtypes import compute_dtype
from tl_ir.interpret_scalars import cast_value, int_width, wrap

__all__ = ["MATH_CALLS", "math_call"]

_Float = Callable[[np.float64], Any]

#: One-operand float functions, evaluated in float64.
_UNARY: dict[str, _Float] = {
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(np.float64(10.0), x),
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "erf": lambda x: math.erf(float(x)),
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": np.rint,  # TVM's round is nearbyint: ties to even
    "nearbyint": np.rint,
    "fabs": np.abs,
    "abs": np.abs,
}

#: Two-operand float functions, evaluated in float64.
_BINARY: dict[str, Callable[[np.float64, np.float64], Any]] = {
    "pow": np.power,
    "copysign": np.copysign,
    "hypot": np.hypot,
    "atan2": np.arctan2,
    "fmod": np.fmod,
}

#: Calls whose value is their first operand (hints).
_IDENTITY = frozenset({"likely", "tvm_thread_invariant"})

#: Every call short name `math_call` computes.
MATH_CALLS: frozenset[str] = frozenset(
    {
        *_UNARY,
        *_BINARY,
        *_IDENTITY,
        "rsqrt",
        "sigmoid",
        "nextafter",
        "ldexp",
        "isnan",
        "isinf",
        "isfinite",
        "clz",
        "popcount",
        "assume",
        "fma",
    }
)


def _round_to_odd(exact: Fraction) -> float:
    """``exact`` as a float64 rounded to odd: truncated, with the last bit set when
    inexact. Rounding that to a type at least 2 bits narrower is rounding ``exact``
    itself (no double rounding)."""
    nearest = float(exact)
    if Fraction(nearest) == exact:
        return nearest
    truncated = nearest if abs(Fraction(nearest)) < abs(exact) else math.nextafter(nearest, 0.0)
    if int(np.float64(truncated).view(np.int64)) & 1 == 0:
        truncated = math.nextafter(truncated, math.copysign(math.inf, truncated))
    return truncated


def _fused_multiply_add(a: Any, b: Any, c: Any, inner: str) -> float:
    """``a * b + c`` rounded once to ``inner`` (float32 or float64), as C's ``fmaf``/``fma``;
    special values (inf, NaN) as IEEE 754 gives them."""
    x, y, z = float(a), float(b), float(c)
    if not all(math.isfinite(v) for v in (x, y, z)):
        with np.errstate(all="ignore"):
            return float(np.float64(x) * np.float64(y) + np.float64(z))
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    if exact == 0:  # the sign of an exact zero: IEEE 754's rule for x*y + z
        product_sign = math.copysign(1.0, x) * math.copysign(1.0, y)
        negative = product_sign < 0 and math.copysign(1.0, z) < 0
        return -0.0 if negative else 0.0
    try:
        value = float(exact) if inner == "float64" else _round_to_odd(exact)
    except OverflowError:
        value = math.copysign(math.inf, exact)
    rounded: float = cast_value(value, inner)
    return rounded


def _math_dtype(dtype: str) -> str:
    return "float64" if dtype == "float64" else "float32"


def math_call(name: str, args: Sequence[Any], arg_dtypes: Sequence[str], dtype: str) -> Any:
    """The value of the call ``name(*args)`` (a key of `MATH_CALLS`) whose result has
    scalar dtype ``dtype``; ``args`` are the operands' values, ``arg_dtypes`` their
    scalar dtypes (module docstring for the precision).

    Raises:
        NotImplementedError: ``name`` is not in `MATH_CALLS`, or an integer call of a
            non-integer operand.
    """
    if name in _IDENTITY:
        return args[0]
    if name == "assume":  # an optimizer hint: nothing to compute
        return 0
    if name in ("isnan", "isinf", "isfinite"):
        x = float(args[0]) if "int" not in arg_dtypes[0] else 0.0
        test = {"isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite}[name]
        return test(x)
    if name in ("clz", "popcount"):
        return _bit_count(name, args[0], arg_dtypes[0], dtype)
    if name in ("abs", "fabs") and int_width(dtype) is not None:
        return wrap(abs(int(args[0])), dtype)
    inner = _math_dtype(dtype)
    if name == "fma":
        return cast_value(_fused_multiply_add(args[0], args[1], args[2], inner), dtype)
    with np.errstate(all="ignore"):
        if name in _UNARY:
            value = _UNARY[name](np.float64(args[0]))
        elif name in _BINARY:
            value = _BINARY[name](np.float64(args[0]), np.float64(args[1]))
        elif name == "ldexp":
            value = np.ldexp(np.float64(args[0]), int(args[1]))
        elif name == "nextafter":  # the neighbour in the result's own dtype
            own = compute_dtype(dtype)
            pair = np.array([args[0], args[1]], dtype=np.float64).astype(own)
            return float(np.nextafter(pair[:1], pair[1:])[0])
        elif name == "rsqrt":  # 1 / sqrt(x), each rounded
            root = cast_value(float(np.sqrt(np.float64(args[0]))), inner)
            value = np.float64(1.0) / np.float64(root)
        elif name == "sigmoid":  # 1 / (1 + exp(-x)), each rounded
            decay = cast_value(float(np.exp(-np.float64(args[0]))), inner)
            denominator = cast_value(1.0 + decay, inner)
            value = np.float64(1.0) / np.float64(denominator)
        else:
            raise NotImplementedError(f"interpret: call of {name}")
    return cast_value(cast_value(float(value), inner), dtype)


def _bit_count(name: str, value: Any, operand_dtype: str, dtype: str) -> int:
    width = int_width(operand_dtype)
    if width is None:
        raise NotImplementedError(f"interpret: {name} of dtype {operand_dtype}")
    bits = int(value) & ((1 << width) - 1)
    count = width - bits.bit_length() if name == "clz" else bin(bits).count("1")
    return int(wrap(count, dtype))
