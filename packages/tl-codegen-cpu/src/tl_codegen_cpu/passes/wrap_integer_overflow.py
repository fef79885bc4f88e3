"""`cpu-wrap-integer-overflow`: 32-bit integer arithmetic wraps, as on GPUs.

``A[i] + B[i]`` past ``2**31 - 1`` wraps to a negative number on a GPU (PTX
``add.s32``) and in the reference interpreter, and TileLang kernels rely on it (hashes,
overflow checks such as ``a + b < a``). In C a signed overflow is undefined and
TVM's LLVM code generator marks 32- and 64-bit integer arithmetic "no signed/unsigned
wrap", so gcc and LLVM assumed it cannot happen: a sum widened to ``int64`` kept the
unwrapped value on both CPU targets, and an overflow check was folded to false. This
pass computes each 32-bit ``+``, ``-`` and ``*`` in a value a statement stores in 64
bits, where it cannot overflow, and converts the result back, which wraps (C converts
modulo 2**32; LLVM folds the pair into the plain 32-bit instruction without the
no-wrap assumption, gcc's vectorizer narrows it the same way). Index arithmetic
(buffer indices, loop bounds, and values stored into a local an index reads, such as
``k = bx * 64 + i``) is left alone: it stays affine for the vectorizer, and an index
that overflows addresses outside the buffer anyway. C defines unsigned arithmetic to
wrap, so on ``c`` (``wrap_unsigned=False``) ``uint32`` and ``uint64`` are left as
written and an ``int64`` ``+ - *`` is computed in ``uint64`` and converted back. TVM's
LLVM code marks 64-bit arithmetic no-wrap too (``T.uint64(0) - x`` was 0, ``x + 5 <
x`` false), and LLVM has no wider native type, so on ``llvm`` ``uint32`` goes through
64 bits and ``int64``/``uint64`` through 128 (``int128``; ``uint128`` for a ``uint64``
product): LLVM narrows the truncated 128-bit operation back to the 64-bit instruction,
without the no-wrap flags. A ``uint64`` constant from ``2**63`` up is written as its
negative equivalent modulo ``2**64`` (TVM's LLVM code takes no immediate beyond
int64), and its product in ``int128``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
from tvm import tirx

from tl_codegen_cpu.lowering.stored_values import map_stored_values
from tl_ir.index_ranges import range_analyzer
from tl_passes.pass_base import PassContext, PrimFuncPass
from tl_passes.wrapping_casts import wrapping_cast

__all__ = ["CpuWrapIntegerOverflowPass", "wrap_integer_overflow"]


def _wider(dtype: str, node: Any, wrap_unsigned: bool) -> str | None:
    """The type the 8-, 16-, 32- or 64-bit ``node`` computes in, where it cannot
    overflow (for ``int64`` on ``c``: ``uint64``, where C defines the wrap): a
    difference of unsigned values may be negative (and TVM refuses a negative
    unsigned constant), a product of two may exceed the signed type."""
    if dtype == "int32":
        return "int64"
    if dtype == "int64":
        return "int128" if wrap_unsigned else "uint64"
    if dtype == "uint64" and wrap_unsigned:
        return "uint128" if isinstance(node, tirx.Mul) and not _has_constant(node) else "int128"
    if dtype == "uint32" and wrap_unsigned:
        return "int64" if isinstance(node, tirx.Sub) else "uint64"
    if dtype in _NARROW:
        # Both targets wrap narrow arithmetic already (C by `cpu-wrap-narrow-integers`,
        # LLVM's i8/i16 instructions), but TVM's bounds took a product of two
        # non-negative values for non-negative: a remainder became a truncating one.
        return "uint32" if dtype.startswith("uint") and isinstance(node, tirx.Mul) else "int32"
    return None


_NARROW = ("int8", "int16", "uint8", "uint16")


def _is_constant(expr: Any) -> bool:
    if isinstance(expr, tirx.Broadcast):
        expr = expr.value
    return isinstance(expr, tirx.IntImm)


def _has_constant(node: Any) -> bool:
    return _is_constant(node.a) or _is_constant(node.b)


def _widened(operand: Any, wide: str) -> Any:
    """``operand`` converted to the integer type ``wide``; a constant is written as a
    constant of ``wide`` with the same value modulo ``2**64`` (a ``uint64`` from
    ``2**63`` up as its negative equivalent in ``int128``, an ``int64`` below 0 as
    its ``uint64`` equivalent), so no conversion of a constant is left to fold into an
    immediate TVM refuses."""
    inner = operand.value if isinstance(operand, tirx.Broadcast) else operand
    scalar_wide = str(tvm.DataType(wide).with_lanes(1))
    if not isinstance(inner, tirx.IntImm) or scalar_wide not in ("int128", "uint64"):
        return tirx.Cast(wide, operand)
    value = int(inner.value)
    if scalar_wide == "int128" and str(inner.ty.dtype) == "uint64" and value >= 1 << 63:
        value -= 1 << 64
    elif scalar_wide == "uint64" and value < 0:
        value += 1 << 64
    constant = tirx.IntImm(scalar_wide, value)
    if isinstance(operand, tirx.Broadcast):
        return tirx.Broadcast(constant, operand.lanes)
    return constant


#: What `tvm.sym.Analyzer.const_int_bound` reports for an unbounded side.
_UNBOUNDED_LOW, _UNBOUNDED_HIGH = -(1 << 63), (1 << 63) - 1


def _bound(analyzer: Any, operand: Any) -> tuple[float, float]:
    bound = analyzer.const_int_bound(operand)
    low, high = int(bound.min_value), int(bound.max_value)
    return (
        -math.inf if low == _UNBOUNDED_LOW else low,
        math.inf if high == _UNBOUNDED_HIGH else high,
    )


def _fits(node: Any, dtype: str, analyzer: Any) -> bool:
    """Whether the operands' bounds prove ``node`` within ``dtype`` (an "is a number"
    flag times a value, a sum of two bytes widened, an index-like ``bx * 16 + i`` in a
    condition, with ``analyzer`` knowing the loops' ranges): no wrap to write."""
    (a_lo, a_hi), (b_lo, b_hi) = (_bound(analyzer, operand) for operand in (node.a, node.b))
    if isinstance(node, tirx.Add):
        low, high = a_lo + b_lo, a_hi + b_hi
    elif isinstance(node, tirx.Sub):
        low, high = a_lo - b_hi, a_hi - b_lo
    else:
        if math.inf in (abs(a_lo), a_hi, abs(b_lo), b_hi):
            return False
        products = [a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi]
        low, high = min(products), max(products)
    bits = int(tvm.DataType(dtype).bits)
    if dtype.startswith("uint"):
        return low >= 0 and high < (1 << bits)
    return -(1 << (bits - 1)) <= low and high < (1 << (bits - 1))


@dataclass
class _WideResults:
    """The wrapped results this pass wrote, each with the wide computation it wraps and
    that computation's bounds, so that an operation on a wrapped result can continue
    the wide computation instead of widening the wrapped value again.

    Arithmetic modulo ``2**bits`` gives the same low bits whether each step wraps or
    only the last one does, so ``a + b * c`` wraps once when its wide computation
    provably stays inside the wide type. Each wrap names its operand twice (the mask
    and the sign bit), so wrapping every step of a nest doubled the expression per
    level: a varlen attention's guard ``q_start + bx * 64 + i`` grew to kilobytes."""

    computations: dict[Any, tuple[Any, float, float]]


def _operand_in(
    operand: Any, wide: str, analyzer: Any, results: _WideResults
) -> tuple[Any, float, float]:
    """``operand`` as a value of ``wide`` with its bounds: the wide computation behind
    a wrapped result when it is of that type, else the operand converted."""
    found = results.computations.get(operand)
    if found is not None and str(found[0].ty.dtype) == wide:
        return found
    low, high = _bound(analyzer, operand)
    return _widened(operand, wide), low, high


def _combined_bounds(
    node: Any, a: tuple[Any, float, float], b: tuple[Any, float, float]
) -> tuple[float, float]:
    (_, a_lo, a_hi), (_, b_lo, b_hi) = a, b
    if isinstance(node, tirx.Add):
        return a_lo + b_lo, a_hi + b_hi
    if isinstance(node, tirx.Sub):
        return a_lo - b_hi, a_hi - b_lo
    if math.inf in (abs(a_lo), a_hi, abs(b_lo), b_hi):
        return -math.inf, math.inf
    products = [a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi]
    return min(products), max(products)


def _exact_in(wide: str, low: float, high: float) -> bool:
    """Whether every value in ``[low, high]`` is a value of the integer type ``wide``
    (the wide computation then neither wraps nor overflows)."""
    scalar = tvm.DataType(wide).with_lanes(1)
    bits = int(scalar.bits)
    if str(scalar).startswith("uint"):
        return low >= 0 and high < (1 << bits)
    return -(1 << (bits - 1)) <= low and high < (1 << (bits - 1))


def _wrapping(node: Any, wrap_unsigned: bool, analyzer: Any, results: _WideResults) -> Any:
    dtype = tvm.DataType(str(node.ty.dtype))
    scalar = str(dtype.with_lanes(1))
    wider = _wider(scalar, node, wrap_unsigned)
    # Constants on both sides are TVM's to fold.
    if wider is None or (_is_constant(node.a) and _is_constant(node.b)):
        return node
    if _fits(node, scalar, analyzer):
        return node
    wide = str(tvm.DataType(wider).with_lanes(dtype.lanes))
    if wider in ("int128", "uint128"):
        # The truncation LLVM narrows back to the 64-bit instruction.
        return tirx.Cast(str(dtype), type(node)(_widened(node.a, wide), _widened(node.b, wide)))
    a, b = (_operand_in(operand, wide, analyzer, results) for operand in (node.a, node.b))
    low, high = _combined_bounds(node, a, b)
    # C's unsigned arithmetic wraps by definition: a chain in uint64 (an int64 chain on
    # c) continues whatever its bounds.
    modular = wider == "uint64" and not wrap_unsigned
    if not modular and not _exact_in(wide, low, high):
        # The continued computation could overflow the wide type: start from the
        # wrapped operands, whose bounds are the narrow type's.
        a, b = (_operand_in(operand, wide, analyzer, _NO_RESULTS) for operand in (node.a, node.b))
        low, high = _combined_bounds(node, a, b)
    computed = type(node)(a[0], b[0])
    # Not a plain Cast back: TVM's bounds would take it for the unwrapped value (a
    # remainder of a wrapped product became a truncating one).
    wrapped = wrapping_cast(str(dtype), computed)
    if modular or _exact_in(wide, low, high):
        results.computations[wrapped] = (computed, low, high)
    return wrapped


_NO_RESULTS = _WideResults({})


def _bitwise_not(node: Any) -> Any:
    """``~x`` of an 8- or 16-bit ``x``: C computes it on ``x`` promoted to ``int``, so
    ``~a`` of a uint8 was ``-a - 1`` (not ``255 - a``) on ``c``; wrapped to the type."""
    dtype = tvm.DataType(str(node.ty.dtype))
    if str(dtype.with_lanes(1)) not in _NARROW:
        return node
    wide = str(tvm.DataType("int32").with_lanes(dtype.lanes))
    return wrapping_cast(str(dtype), tirx.bitwise_not(tirx.Cast(wide, node.a)))


def _rewrite(node: Any, wrap_unsigned: bool, analyzer: Any, results: _WideResults) -> Any:
    if isinstance(node, _BITWISE_NOT):
        return _bitwise_not(node)
    return _wrapping(node, wrap_unsigned, analyzer, results)


_BITWISE_NOT = tirx.BitwiseNot


def wrap_integer_overflow(stmt: tirx.Stmt, wrap_unsigned: bool = True) -> tirx.Stmt:
    """``stmt`` with each stored value's 8-, 16- and 32-bit ``+``/``-``/``*`` (and 8/16-bit
    ``~``) wrapping on overflow (``uint32`` only when ``wrap_unsigned``: leave it False
    only for a code generator whose unsigned arithmetic wraps by itself, as C's does),
    each written so TVM's bounds see the wrap (`wrapping_cast`); an operation whose
    operands' bounds (the loops' ranges known) prove it cannot overflow is left as it
    is."""
    analyzer = range_analyzer(stmt)
    results = _WideResults({})
    return map_stored_values(
        stmt,
        (tirx.Add, tirx.Sub, tirx.Mul, _BITWISE_NOT),
        lambda node: _rewrite(node, wrap_unsigned, analyzer, results),
        skip_indices=True,
    )


@dataclass(frozen=True)
class CpuWrapIntegerOverflowPass(PrimFuncPass):
    """Make 32-bit integer overflow in stored values wrap (module docstring)."""

    name: ClassVar[str] = "cpu-wrap-integer-overflow"
    #: Route ``uint32`` through 64 bits too (``llvm``); ``c`` wraps it by itself.
    wrap_unsigned: bool = True

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its stored 32-bit integer arithmetic wrapping."""
        return wrap_integer_overflow(body, self.wrap_unsigned)
