"""Conversions of constants, computed when the kernel is parsed.

TVM's simplifier folds ``Cast(dtype, constant)`` into a constant of ``dtype`` and
refuses one the type cannot hold (``T.cast(200, "int8")``: "Literal value 200 exceeds
range of int8"; ``T.cast(-1, "uint16")``: "cannot make uint from negative value";
``T.cast(1e6, "float16")``: "exceeds maximum of float16"), so a legal program failed to
build on every compiled target while the reference interpreter computed it. `T.cast`
of a constant is therefore computed here, with the conversion every target applies to
a value known only at run time (`tl_ir.interpret_scalars.cast_value`, what the
interpreter computes):

* an integer converted to a narrower (or unsigned) integer type wraps modulo
  ``2**bits`` (``T.cast(200, "int8")`` is -56, ``T.cast(-1, "uint16")`` 65535);
* a float converted to an integer type truncates toward zero and saturates to the
  type's range, NaN giving 0 (``T.cast(3e9, "int32")`` is 2147483647);
* a value converted to ``float16``, ``float32`` or ``bfloat16`` rounds to nearest,
  ties to even, and one beyond the type's largest finite value is infinity
  (``T.cast(1e6, "float16")`` is ``inf``);
* a value converted to ``bool`` is whether it is non-zero.

Vector dtypes and the float8 types are left to the backends (the CPU's
`cpu-legalize-float8` computes a float8 cast of a constant itself).
"""

from __future__ import annotations

import re
from typing import Any

import tvm
from tvm import tirx

from tl_ir.interpret_scalars import cast_value, dtype_of

__all__ = [
    "FOLDED_DTYPES",
    "constant_cast",
    "fold_constant_cast",
    "integer_range",
    "out_of_range_message",
    "stored_integer",
]

#: The scalar dtypes a cast of a constant is computed to.
FOLDED_DTYPES = frozenset(
    {
        "bool",
        *(f"int{bits}" for bits in (8, 16, 32, 64)),
        *(f"uint{bits}" for bits in (8, 16, 32, 64)),
        "float16",
        "float32",
        "float64",
        "bfloat16",
    }
)


def _constant_value(expr: Any) -> int | float | None:
    """The value of the scalar constant ``expr`` as its dtype holds it, or None."""
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.FloatImm):
        source = dtype_of(expr)
        if source not in FOLDED_DTYPES:
            return None  # a float8 constant: its value is the backend's business
        value: float = cast_value(float(expr.value), source)
        return value
    return None


def fold_constant_cast(cast: Any) -> Any:
    """``cast`` (a ``tirx.Cast``) as the constant it computes when its operand is a
    scalar constant and its dtype one of `FOLDED_DTYPES` (module docstring); ``cast``
    itself otherwise."""
    if not isinstance(cast, tirx.Cast):
        return cast
    target = dtype_of(cast)
    if target not in FOLDED_DTYPES:
        return cast
    value = _constant_value(cast.value)
    if value is None:
        return cast
    converted = cast_value(value, target)
    if target == "bool":
        return tirx.IntImm("bool", int(bool(converted)))
    if tvm.DataType(target).type_code in (tvm.DataTypeCode.INT, tvm.DataTypeCode.UINT):
        return tirx.IntImm(target, int(converted))
    return tirx.FloatImm(target, float(converted))


def constant_cast(value: Any, dtype: str) -> Any:
    """``T.cast(value, dtype)``: ``value`` (an expression or a Python number) converted to
    the normalized ``dtype``, computed now when ``value`` is a scalar constant
    (`fold_constant_cast`). A Python float is read as the float64 it is (TVM would
    read it as a float32 constant, refuse one beyond float32's range, and fold
    ``T.cast(0.1, "float64")`` to the double 0.1 anyway: the value the kernel's
    author wrote, as TileLang computes it)."""
    if isinstance(value, float):
        value = tirx.FloatImm("float64", value)
    return fold_constant_cast(tirx.Cast(dtype, value))


_LITERAL_RANGE = re.compile(r"Literal value (-?\d+) exceeds (?:range|maximum) of (u?)int(\d+)")
_NEGATIVE_UNSIGNED = re.compile(r"cannot make uint from negative value (-?\d+)")


def out_of_range_message(text: str) -> str | None:
    """The parser's message for TVM's refusal ``text`` of an integer constant its type
    cannot hold (``O[i] = 200`` into int8, ``T.int8(200)``, ``T.uint8(-1)``; TileLang
    refuses them too, while ``T.cast(200, "int8")`` wraps), or None for another error."""
    match = _LITERAL_RANGE.search(text)
    if match is not None:
        value, unsigned, bits = int(match.group(1)), match.group(2) == "u", int(match.group(3))
        dtype = f"{match.group(2)}int{bits}"
        low = 0 if unsigned else -(1 << (bits - 1))
        high = low + (1 << bits) - 1
        wrapped = (value - low) % (1 << bits) + low
        return (
            f"invalid operand: the constant {value} does not fit {dtype} ({low} to {high}); "
            f'write T.cast({value}, "{dtype}") for its wrapped value ({wrapped})'
        )
    match = _NEGATIVE_UNSIGNED.search(text)
    if match is not None:
        value = int(match.group(1))
        return (
            f"invalid operand: the constant {value} is negative and does not fit an unsigned "
            f"integer type; write T.cast({value}, dtype) for its wrapped value "
            f'(T.cast(-1, "uint8") is 255)'
        )
    return None


def integer_range(dtype: str) -> tuple[int, int]:
    """The smallest and largest value of the integer dtype ``dtype`` (``"uint8"``...)."""
    bits = int(tvm.DataType(dtype).bits)
    if dtype.startswith("uint"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def stored_integer(value: int, dtype: str) -> Any:
    """The constant a Python int ``value`` stored into an element of integer dtype
    ``dtype`` is: a constant of ``dtype`` (TVM would build a plain int as int32 or int64
    and cannot hold a uint64 above ``2**63 - 1`` at all).

    Raises:
        ValueError: ``value`` does not fit ``dtype``; the message gives the range and
            the ``T.cast`` spelling of the wrapped value.
    """
    low, high = integer_range(dtype)
    if not low <= value <= high:
        wrapped = (value - low) % (high - low + 1) + low
        raise ValueError(
            f"the constant {value} does not fit {dtype} ({low} to {high}); write "
            f'T.cast({value}, "{dtype}") for its wrapped value ({wrapped})'
        )
    return tirx.const(value, dtype)
