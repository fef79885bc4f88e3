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

A product with a forwarded zero (``T.fill(z, 0.0); B[i] = A[i] * z[i]``) is the
other half: TVM folds ``x * 0.0`` to 0, but it is NaN for an infinite or NaN ``x``
(and ``-0.0`` for a negative one). `products_by_zero_kept` writes the zero so that
TVM cannot see it (a CPU backend's passes that forward values run it through
`zero_operands_kept`). A literal ``x * 0.0`` in a kernel's source is folded by TVM as
TileLang's parser folds it.
"""

from __future__ import annotations

import math
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.frontend import current_state

__all__ = [
    "divided_by_zero",
    "divisions_by_zero_as_products",
    "install",
    "products_by_zero_kept",
    "zero_operands_kept",
    "zero_sign",
]

#: The float types with an infinity to divide into (float8 arithmetic is widened to
#: float32 before anything folds it; e4m3fn has no infinity).
_IEEE_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})

#: The float types whose products by a zero are kept (half-precision arithmetic is
#: computed in float32 once legalized; its zeros are left to that).
_KEPT_PRODUCT_FLOATS = frozenset({"float32", "float64"})


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


def _negative_zero(dtype: tvm.DataType) -> Any:
    """``-0.0`` of ``dtype`` as TVM's folder cannot see it: the ``reinterpret`` of its
    bits (its sign bit; TVM's LLVM code generator takes a reinterpret of the bits 0 for
    a null pointer, so +0.0 is not written this way)."""
    scalar = str(dtype.with_lanes(1))
    bits = tvm.DataType(scalar).bits
    zero = tirx.call_intrin(scalar, "tirx.reinterpret", tirx.const(1 << (bits - 1), f"uint{bits}"))
    return zero if dtype.lanes == 1 else tirx.Broadcast(zero, dtype.lanes)


def _times_kept_zero(value: Any, dtype: tvm.DataType, sign: float) -> Any:
    """``value * (sign * 0.0)`` that stays a run-time multiplication (C's and LLVM's
    optimizers keep ``x * 0.0`` without fast-math: NaN for an infinite or NaN ``x``,
    the signs' product otherwise); ``x * +0.0`` is ``(x * -0.0) * -1.0``."""
    product = tirx.Mul(value, _negative_zero(dtype))
    if sign < 0:
        return product
    minus_one = tirx.FloatImm(str(dtype.with_lanes(1)), -1.0)
    return tirx.Mul(
        product, minus_one if dtype.lanes == 1 else tirx.Broadcast(minus_one, dtype.lanes)
    )


def products_by_zero_kept(stmt: Any) -> Any:
    """``stmt`` with each float product of a run-time value and a constant zero (a fill
    or a tile's known contents forwarded into ``x * z[i]``) kept as a run-time
    multiplication: TVM's folder makes it 0, where C, CUDA, TileLang (which keeps the
    tile in memory) and the reference interpreter give NaN for an infinite or NaN
    ``x`` and ``-0.0`` for a negative one. The same object when there is none."""

    def product(node: Any) -> Any:
        dtype = _dtype(node)
        if dtype is None or str(dtype.with_lanes(1)) not in _KEPT_PRODUCT_FLOATS:
            return node
        for zero, other in ((node.b, node.a), (node.a, node.b)):
            sign = zero_sign(zero)
            if sign is not None and not _is_constant(other):
                return _times_kept_zero(other, dtype, sign)
        return node

    return tvm_ffi.structural_map(stmt, (tirx.Mul, product), order="post")


def _is_constant(expr: Any) -> bool:
    if isinstance(expr, tirx.Broadcast | tirx.Cast):
        return _is_constant(expr.value)
    return isinstance(expr, tirx.FloatImm | tirx.IntImm)


def zero_operands_kept(stmt: Any) -> Any:
    """`divisions_by_zero_as_products` then `products_by_zero_kept`: what a pass that
    forwards known values into expressions runs on its result."""
    return products_by_zero_kept(divisions_by_zero_as_products(stmt))


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
