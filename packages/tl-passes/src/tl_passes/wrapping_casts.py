"""Integer conversions that wrap, written so TVM's bound analysis sees the wrap.

``T.cast(u, "int32")`` of a ``uint32`` value at or above ``2**31`` is negative on every
target (two's complement: the low 32 bits), and so is an ``int32`` sum computed in 64
bits and converted back (`cpu-wrap-integer-overflow`). TVM's integer analysis bounds a
conversion by intersecting the value's range with the target type's, so it took such
a conversion for the value itself: ``T.cast(u, "int32") < 0`` folded to false,
``T.max(T.cast(u, "int32"), 0)`` to the conversion, a floor division or remainder by a
positive constant became a truncating one, and the zero-divisor guard of a remainder
was dropped (a SIGFPE on llvm). `wrapping_cast` writes a conversion the value may not
fit as arithmetic whose bounds are honest (the low bits, sign-extended by hand), and
which the C compilers fold back to the plain conversion; a conversion the value
provably fits stays as it is. `WrappingCastsPass` (``wrapping-casts``) applies it to
the conversions of stored values, branch conditions and bound values, before any
simplification, in the CPU and GPU pipelines; indices and loop bounds are left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = [
    "WrappingCastsPass",
    "map_values",
    "may_wrap",
    "rewrite_outside_indices",
    "wrap_integer_casts",
    "wrapping_cast",
]


def _type_code_name(dtype: Any) -> str:
    text = str(dtype)
    if text.startswith("uint"):
        return "uint"
    if text.startswith("int"):
        return "int"
    return "other"


def _scalar_range(dtype_text: str) -> tuple[int, int] | None:
    dtype = tvm.DataType(dtype_text)
    kind = _type_code_name(dtype.with_lanes(1))
    bits = int(dtype.bits)
    if kind == "int":
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if kind == "uint" and bits > 1:
        return 0, (1 << bits) - 1
    return None


def may_wrap(cast: Any, analyzer: Any) -> bool:
    """Whether the integer conversion ``cast`` may change its value: its target type
    cannot hold every value of its source type, and ``analyzer`` cannot prove the value
    within the target's range."""
    target = _scalar_range(str(cast.ty.dtype))
    source = _scalar_range(str(cast.value.ty.dtype))
    if target is None or source is None:
        return False
    if target[0] <= source[0] and source[1] <= target[1]:
        return False
    bound = analyzer.const_int_bound(cast.value)
    # const_int_bound reports the int64 extremes for "unbounded" (a uint64 value's
    # bound is [0, 2**63 - 1] although it reaches 2**64 - 1).
    low, high = int(bound.min_value), int(bound.max_value)
    low = -(1 << 70) if low == -(1 << 63) else low
    high = 1 << 70 if high == (1 << 63) - 1 else high
    return not (target[0] <= low and high <= target[1])


def _const(value: int, dtype: str, lanes: int) -> Any:
    scalar = tirx.const(value, dtype)
    return scalar if lanes == 1 else tirx.Broadcast(scalar, lanes)


def wrapping_cast(target: str, value: Any, *, wide_bits: int = 64) -> Any:
    """``Cast(target, value)`` of an integer ``value`` into the integer type ``target``,
    keeping the low bits (two's complement), written so that the conversion itself never
    changes the value. ``wide_bits`` (64, or 32 for a language without 64-bit integers)
    is the widest integer the target language has: a narrower ``target`` takes the low
    bits with a mask and sign-extends them by arithmetic at that width
    (``low - ((low >> (bits - 1)) << bits)``), whose bounds TVM's analysis follows and
    which the C compilers fold back to the plain truncation; a ``target`` of that width
    selects between the value and its complement's complement (``-(~x) - 1`` for a
    negative result), each of which the conversion provably keeps."""
    dtype = tvm.DataType(target)
    lanes = int(dtype.lanes)
    bits = int(dtype.bits)
    signed = _type_code_name(dtype.with_lanes(1)) == "int"
    source = str(tvm.DataType(str(value.ty.dtype)).with_lanes(1))
    if int(tvm.DataType(source).bits) > wide_bits or bits > wide_bits:
        raise NotImplementedError(
            f"wrapping-casts: a conversion from {source} to {target} is wider than the "
            f"target language's {wide_bits}-bit integers"
        )
    wide_signed = str(tvm.DataType(f"int{wide_bits}").with_lanes(lanes))
    wide_unsigned = str(tvm.DataType(f"uint{wide_bits}").with_lanes(lanes))
    if bits == wide_bits:
        if signed:  # unsigned -> signed: x - 2**bits from 2**(bits - 1) up
            top = _const(1 << (bits - 1), source, lanes)
            minus_one = _const(1, wide_signed, lanes)
            negative = -tirx.Cast(wide_signed, tirx.bitwise_not(value)) - minus_one
            return tirx.Select(value >= top, negative, tirx.Cast(wide_signed, value))
        # signed -> unsigned: 2**bits + x below 0
        zero = _const(0, source, lanes)
        below = tirx.bitwise_not(tirx.Cast(wide_unsigned, tirx.bitwise_not(value)))
        return tirx.Select(value < zero, below, tirx.Cast(wide_unsigned, value))
    mask = (1 << bits) - 1
    if source.startswith("uint") and int(tvm.DataType(source).bits) == wide_bits:
        # an unsigned source of the wide width: converting it first could wrap
        low = tirx.Cast(wide_signed, tirx.bitwise_and(value, _const(mask, source, lanes)))
    else:
        low = tirx.bitwise_and(tirx.Cast(wide_signed, value), _const(mask, wide_signed, lanes))
    if not signed:
        return tirx.Cast(target, low)
    # low - 2**bits where the sign bit is set: shifts rather than an xor, which gcc
    # kept in the vector loop (the shifted term truncates to 0 and folds away).
    top = tirx.shift_left(
        tirx.shift_right(low, _const(bits - 1, wide_signed, lanes)),
        _const(bits, wide_signed, lanes),
    )
    return tirx.Cast(target, low - top)


def rewrite_outside_indices(
    value: Any, node_types: tuple[type, ...], rewrite: Callable[[Any], Any]
) -> Any:
    """``value`` with ``rewrite`` applied, bottom-up, to every node of ``node_types``
    outside the indices of its loads."""
    hidden: dict[Any, Any] = {}

    def hide(load: Any) -> Any:
        placeholder = tirx.Var("load", load.ty.dtype)
        hidden[placeholder] = load
        return placeholder

    masked = tvm_ffi.structural_map(value, (tvm.ir.TensorLoad, hide), order="post")
    rewritten = tvm_ffi.structural_map(masked, (node_types, rewrite), order="post")
    if rewritten.same_as(masked):
        return value
    while True:  # a hidden load may hold the placeholder of a load in its indices
        restored = substitute_vars(rewritten, hidden)
        if restored.same_as(rewritten):
            return restored
        rewritten = restored


def map_values(
    stmt: tirx.Stmt, node_types: tuple[type, ...], rewrite: Callable[[Any], Any]
) -> tirx.Stmt:
    """``stmt`` with ``rewrite`` applied, bottom-up, to every node of ``node_types`` in
    its stored values, branch conditions and bound values, outside load indices (loop
    bounds and indices are left alone)."""

    def in_value(value: Any) -> Any:
        return rewrite_outside_indices(value, node_types, rewrite)

    def store(node: Any) -> Any:
        value = in_value(node.value)
        if value.same_as(node.value):
            return node
        return tirx.BufferStore(node.buffer, value, list(node.indices))

    def branch(node: Any) -> Any:
        condition = in_value(node.condition)
        if condition.same_as(node.condition):
            return node
        return tirx.IfThenElse(condition, node.then_case, node.else_case)

    def bind(node: Any) -> Any:
        value = in_value(node.value)
        if value.same_as(node.value):
            return node
        return tirx.Bind(node.var, value)

    return tvm_ffi.structural_map(
        stmt,
        [(tirx.BufferStore, store), (tirx.IfThenElse, branch), (tirx.Bind, bind)],
        order="post",
    )


def wrap_integer_casts(stmt: tirx.Stmt, *, wide_bits: int = 64) -> tirx.Stmt:
    """``stmt`` with each integer conversion that may wrap, in a stored value, a branch
    condition or a bound value, written as `wrapping_cast` (with ``wide_bits``)."""
    analyzer = tvm.sym.Analyzer()

    def cast(node: Any) -> Any:
        if not may_wrap(node, analyzer):
            return node
        return wrapping_cast(str(node.ty.dtype), node.value, wide_bits=wide_bits)

    return map_values(stmt, (tirx.Cast,), cast)


@dataclass(frozen=True)
class WrappingCastsPass(PrimFuncPass):
    """Keep wrapping integer conversions wrapping through simplification (module
    docstring)."""

    name: ClassVar[str] = "wrapping-casts"

    #: The widest integer of the target language (32 where it has no 64-bit integers).
    wide_bits: int = 64

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its integer conversions that may wrap made explicit."""
        return wrap_integer_casts(body, wide_bits=self.wide_bits)
