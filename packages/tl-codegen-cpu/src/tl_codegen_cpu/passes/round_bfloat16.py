"""`cpu-round-bfloat16`: every conversion to bfloat16 rounds, on the bits.

TVM's bfloat16 legalization, which runs inside its C and LLVM code generators, keeps a
block-local bfloat16 tile in float32 storage and drops every pair
``Cast(float32, Cast(bfloat16, x))`` as if the round trip changed nothing. So a value
stored into a bfloat16 shared or fragment tile kept all its float32 bits (a GEMM fed by
the usual float32 -> bfloat16 staging copy multiplied unrounded operands), arithmetic
and ``T.cumsum`` in such a tile never rounded, and ``T.cast(T.cast(x, "bfloat16"),
"float32")`` returned ``x``; a conversion from float16 or int32 (257 -> 256) was kept
exact too. This pass, which runs after `cpu-legalize-half-precision`, rewrites every
``Cast(bfloat16, v)`` of another type as ``Cast(bfloat16, round(v))``, ``round``
written out on the float32 bits (round to nearest, ties to even; NaN kept; ``v``
converted to float32 first), so whatever storage TVM gives the value, it is already
a bfloat16 value. Stores into bfloat16 memory, which TVM rounds itself, then round an
exact value: the same result. Before, casts of constants are computed and stored
bfloat16 constants written as their codes (`bfloat16_constants`); on ``llvm``, after,
a vector loop storing one bfloat16 value to every lane is made serial (TVM's
legalization refused the broadcast).

The rounding reads its operand four times, so written out in place, nested bfloat16
arithmetic (``x * a + a`` repeated) grew fourfold per level: four levels took minutes
to build. On ``c`` a rounding nested in another one is bound to a variable first
(its value reading bfloat16 memory through the bits, since TVM's legalization skips
bound values), so the code grows linearly. On ``llvm`` TVM's vectorizer miscompiled
that binding, and nesting still grows the code (documented in docs/cpu.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.math_functions import bfloat16_next_after
from tl_codegen_cpu.passes.bfloat16_constants import bfloat16_constants_as_codes
from tl_codegen_cpu.passes.legalize_float8 import serialize_uniform_float8_stores
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuRoundBfloat16Pass", "round_to_bfloat16"]


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


def round_to_bfloat16(value: Any) -> Any:
    """The float32 ``value`` rounded to the nearest bfloat16 (ties to even), as float32."""
    bits = tirx.reinterpret("uint32", value)
    lowest_kept = tirx.bitwise_and(tirx.shift_right(bits, tirx.const(16, "uint32")), 1)
    rounded = tirx.bitwise_and(
        bits + tirx.const(0x7FFF, "uint32") + lowest_kept, tirx.const(0xFFFF0000, "uint32")
    )
    return tirx.Select(tirx.isnan(value), value, tirx.reinterpret("float32", rounded))


#: The name of the one-element locals nested roundings are computed into.
_LOCAL_PREFIX = "bf16_rounded_"


def _rounding(node: Any) -> Any | None:
    """The float32 value the conversion ``node`` must round, or None when ``node`` is
    not a conversion to bfloat16 from another type."""
    if not isinstance(node, tirx.Cast):
        return None
    source = _dtype(node.value)
    if _dtype(node) != "bfloat16" or source in ("bfloat16", ""):
        return None
    return node.value if source == "float32" else tirx.Cast("float32", node.value)


def _widened_bfloat16(arg: Any) -> bool:
    return (
        isinstance(arg, tirx.Cast) and _dtype(arg) == "float32" and _dtype(arg.value) == "bfloat16"
    )


def _bfloat16_next_after(node: Any) -> Any:
    """``Cast(bfloat16, nextafter(a, b))`` of widened bfloat16 operands as the bfloat16
    step (`bfloat16_next_after`): computed in float32 and rounded, the step was far
    below a bfloat16 ulp and the result was ``a``."""
    value = node.value
    if _dtype(node) != "bfloat16" or not isinstance(value, tvm.ir.Call):
        return node
    if str(getattr(value.op, "name", "")) != "tirx.nextafter" or _dtype(value) != "float32":
        return node
    if not all(_widened_bfloat16(arg) for arg in value.args):
        return node
    return tirx.Cast("bfloat16", bfloat16_next_after(*value.args))


def _mentions(expr: Any, variables: list[Any]) -> list[Any]:
    used: list[Any] = []

    def visit(var: Any) -> None:
        if any(v.same_as(var) for v in variables) and not any(u.same_as(var) for u in used):
            used.append(var)

    tvm_ffi.structural_walk(expr, [(tirx.Var, visit)])
    return used


def _without_bfloat16(value: Any) -> Any:
    """``value`` with no bfloat16 node left: TVM's bfloat16 legalization skips the
    values of bindings (it would read a bfloat16 load's bits as an integer), so a
    bound value reads bfloat16 memory through its bits, and a rounded placeholder
    converted to bfloat16 and back is the placeholder (already a bfloat16 value)."""

    def rewrite(node: Any) -> Any:
        if _dtype(node) != "float32" or _dtype(node.value) != "bfloat16":
            return node
        inner = node.value
        if _already_rounded(getattr(inner, "value", None)) and isinstance(inner, tirx.Cast):
            return inner.value
        if isinstance(inner, tvm.ir.TensorLoad):
            bits = tirx.Cast("uint32", tirx.reinterpret("uint16", inner))
            return tirx.reinterpret("float32", tirx.shift_left(bits, tirx.const(16, "uint32")))
        return node

    return tvm_ffi.structural_map(value, (tirx.Cast, rewrite), order="post")


def _legal_to_bind(value: Any) -> bool:
    """Whether every bfloat16 node of ``value`` is a load read through its bits."""
    loads, read_as_bits, others = 0, 0, 0

    def visit(node: Any) -> None:
        nonlocal loads, read_as_bits, others
        if (
            isinstance(node, tvm.ir.Call)
            and str(getattr(node.op, "name", "")) == "tirx.reinterpret"
        ):
            read_as_bits += sum(_dtype(a) == "bfloat16" for a in node.args)
        elif isinstance(node, tvm.ir.TensorLoad) and _dtype(node) == "bfloat16":
            loads += 1
        elif isinstance(getattr(node, "ty", None), tirx.BufferType):
            pass  # a buffer's handle, not a value
        elif _dtype(node).startswith("bfloat16"):
            others += 1

    tvm_ffi.structural_walk(value, (tvm.ir.Expr, visit), order="pre")
    return others == 0 and loads == read_as_bits


def _round_in_store(store: Any) -> Any:
    """``store`` with its conversions to bfloat16 rounded; a rounding nested in another
    one is computed first into a one-element local, so its value is written once (the
    rounding reads its operand four times: inlined, nested bfloat16 arithmetic grew
    fourfold per level, and a chain of eight operations took minutes to build)."""
    roundings: list[tuple[Any, Any]] = []  # (placeholder, float32 value to round)

    def name(node: Any) -> Any:
        value = _rounding(node)
        if value is None:
            return node
        placeholder = tirx.Var(f"{_LOCAL_PREFIX}{len(roundings)}", "float32")
        roundings.append((placeholder, value))
        return tirx.Cast("bfloat16", placeholder)

    named = tvm_ffi.structural_map(store.value, (tirx.Cast, name), order="post")
    if not roundings:
        return store
    placeholders = [p for p, _ in roundings]
    nested: list[Any] = []
    for _, value in roundings:
        nested.extend(
            v for v in _mentions(value, placeholders) if not any(n.same_as(v) for n in nested)
        )
    replacement: dict[Any, Any] = {}
    bound: list[tuple[Any, Any]] = []
    for placeholder, value in roundings:  # inner roundings first (post-order)
        rounded = round_to_bfloat16(substitute_vars(value, replacement))
        plain = _without_bfloat16(rounded)
        # A bound value must hold no bfloat16 node TVM would have to legalize.
        if any(n.same_as(placeholder) for n in nested) and _legal_to_bind(plain):
            bound.append((placeholder, plain))
        else:
            replacement[placeholder] = rounded
    value = substitute_vars(named, replacement)
    rewritten = tirx.BufferStore(store.buffer, value, list(store.indices))
    if not bound:
        return rewritten
    return tirx.SeqStmt([*(tirx.Bind(p, rounded) for p, rounded in bound), rewritten])


def _already_rounded(value: Any) -> bool:
    """Whether ``value`` is `round_to_bfloat16`'s result or a local holding one."""
    if isinstance(value, tirx.Var):
        return str(value.name).startswith(_LOCAL_PREFIX)
    if not isinstance(value, tirx.Select) or not isinstance(value.false_value, tvm.ir.Call):
        return False
    return str(getattr(value.false_value.op, "name", "")) == "tirx.reinterpret"


def round_bfloat16_conversions(stmt: tirx.Stmt, bind_nested: bool = False) -> tirx.Stmt:
    """``stmt`` with every conversion to bfloat16 reading an explicitly rounded value.

    Args:
        stmt: the statement to rewrite.
        bind_nested: bind a rounding nested in another one to a variable (`c`); on
            `llvm`, TVM's vectorizer miscompiles such a binding of bfloat16 bits, and
            nested roundings are written out in place.
    """
    stmt = tvm_ffi.structural_map(stmt, (tirx.Cast, _bfloat16_next_after), order="post")
    if bind_nested:
        stmt = tvm_ffi.structural_map(stmt, (tirx.BufferStore, _round_in_store), order="post")

    def rewrite(node: Any) -> Any:  # conversions outside stored values (conditions, ...)
        value = _rounding(node)
        if value is None or _already_rounded(value):
            return node
        return tirx.Cast("bfloat16", round_to_bfloat16(value))

    return tvm_ffi.structural_map(stmt, (tirx.Cast, rewrite), order="post")


@dataclass(frozen=True)
class CpuRoundBfloat16Pass(PrimFuncPass):
    """Round every conversion to bfloat16 explicitly (module docstring)."""

    name: ClassVar[str] = "cpu-round-bfloat16"
    #: Bind nested roundings to variables (``c``; see `round_bfloat16_conversions`).
    bind_nested: bool = False

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its bfloat16 constants converted and stored as codes
        (`bfloat16_constants`), every conversion to bfloat16 rounded on the bits and, on
        ``llvm``, its vector loops that store one bfloat16 value to every lane serial."""
        body = round_bfloat16_conversions(bfloat16_constants_as_codes(body), self.bind_nested)
        target = ctx.target
        if target is not None and str(target.kind.name) == "llvm":
            body = serialize_uniform_float8_stores(body, frozenset({"bfloat16"}))
        return body
