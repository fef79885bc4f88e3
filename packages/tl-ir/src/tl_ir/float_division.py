"""A float division by a constant zero has its IEEE result, as in C, CUDA and TileLang.

TVM's constant folder stops with "Divide by zero" (an ``InternalError``) on every
division whose divisor is the constant 0, float ones included, wherever it builds or
simplifies one: the kernel parser's ``x / T.float32(0)``, `simplify`, an analyzer, the
IR printer. A float division by zero is defined (IEEE 754: +-inf, NaN for 0 / 0 and
NaN / 0), and a kernel reaches one legitimately once a pass forwards a tile's known
contents into an expression (``T.fill(z, 0.0); B[i] = A[i] / z[i]``: TileLang keeps
the tile in memory and computes inf or NaN at run time).

``x / (+-0.0)`` equals ``x * (+-inf)`` for every ``x``: +-inf by the signs of ``x``
and the zero, NaN for a zero or NaN ``x``, and +-inf for an infinite ``x``. TVM
folds that product only when both factors are constants, to the same IEEE value, so
it survives every later simplification. `divisions_by_zero_as_products` rewrites a
statement's divisions so; `install` makes the kernel parser's ``/`` build the product
when the divisor is a float constant zero.
"""

from __future__ import annotations

import math
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.frontend import current_state

__all__ = ["divided_by_zero", "divisions_by_zero_as_products", "install", "zero_sign"]

#: The float types with an infinity to divide into (float8 arithmetic is widened to
#: float32 before anything folds it; e4m3fn has no infinity).
_IEEE_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


def _dtype(expr: Any) -> tvm.DataType | None:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return None if dtype is None else tvm.DataType(str(dtype))


def _is_ieee_float(dtype: tvm.DataType | None) -> bool:
    return dtype is not None and str(dtype.with_lanes(1)) in _IEEE_FLOATS


def zero_sign(expr: Any) -> float | None:
    """``1.0`` or ``-1.0`` when ``expr`` is a constant zero (a float or integer
    constant, a cast of one, a broadcast of one) of that sign, otherwise None."""
    if isinstance(expr, tirx.Broadcast):
        return zero_sign(expr.value)
    if isinstance(expr, tirx.Cast):
        # A cast keeps a zero's sign (float) or makes it +0.0 (integer).
        return zero_sign(expr.value)
    if isinstance(expr, tirx.FloatImm) and float(expr.value) == 0.0:
        return math.copysign(1.0, float(expr.value))
    if isinstance(expr, tirx.IntImm) and int(expr.value) == 0:
        return 1.0
    return None


def divided_by_zero(dividend: Any, divisor: Any) -> Any | None:
    """``dividend / divisor`` as ``dividend * (+-inf)`` when both are floats and
    ``divisor`` is a constant zero (module docstring), otherwise None."""
    dtype = _dtype(dividend)
    if dtype is None or not _is_ieee_float(dtype) or _dtype(divisor) != dtype:
        return None
    sign = zero_sign(divisor)
    if sign is None:
        return None
    infinity = tirx.FloatImm(str(dtype.with_lanes(1)), math.copysign(math.inf, sign))
    factor = infinity if dtype.lanes == 1 else tirx.Broadcast(infinity, dtype.lanes)
    return tirx.Mul(dividend, factor)


def divisions_by_zero_as_products(stmt: Any) -> Any:
    """``stmt`` with every float division by a constant zero written as the product
    with the infinity of the quotient's sign (the same object when there is none)."""

    def division(node: Any) -> Any:
        product = divided_by_zero(node.a, node.b)
        return node if product is None else product

    return tvm_ffi.structural_map(stmt, (tirx.Div, division), order="post")


def _typed_like(value: Any, other: Any) -> Any:
    """A Python number operand as a constant of the other operand's scalar float type
    (as TVM's ``/`` converts it); anything else as it is."""
    dtype = _dtype(other)
    if isinstance(value, bool) or not isinstance(value, int | float) or dtype is None:
        return value
    if not _is_ieee_float(dtype) or dtype.lanes != 1:
        return value
    return tirx.const(value, str(dtype))


def install() -> None:
    """Make the kernel parser's ``/`` of two float operands build
    `divided_by_zero`'s product when the divisor is a constant zero (once per
    process; other parses and other divisions keep TVM's ``/``)."""
    from tvm.script.parser.core import dispatch, doc

    previous = dispatch.get_op(tirx.Expr, doc.Div, 1, default=None)
    if getattr(previous, "_tl_float_division", False):
        return

    def divide(a: Any, b: Any) -> Any:
        if current_state() is not None:
            product = divided_by_zero(_typed_like(a, b), _typed_like(b, a))
            if product is not None:
                return product
        return a / b

    divide._tl_float_division = True  # type: ignore[attr-defined]
    for index in (0, 1):
        dispatch.register_op(tirx.Expr, doc.Div, index)(divide)
