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
to build (a depth-3 chain about 100 s on ``llvm``). A rounding nested in another one
is bound to a variable first (its value reading the kernel's bfloat16 parameters
through the bits, since TVM's legalization skips bound values; a value reading a
bfloat16 scalar the kernel declares stays in place), so the code grows linearly. On
``llvm`` a nested rounding of a value that holds no other rounding stays in place
(``a * b + c`` keeps its vectorized loop), and a vectorized loop that binds a rounding
is made serial (`serialize_bound_roundings`: TVM's vectorizer split such a body into
one loop per statement, out of the bindings' scope).
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
from tl_ir.launch import rebuild_loop
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = [
    "CpuRoundBfloat16Pass",
    "round_bfloat16_conversions",
    "round_to_bfloat16",
    "serialize_bound_roundings",
]


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


def _legal_to_bind(value: Any, declared: list[Any]) -> bool:
    """Whether every bfloat16 node of ``value`` is a load of a parameter read through
    its bits: TVM's legalization moves a buffer the kernel declares (a ``local``
    scalar, ``y = a * a + a``) to float32 storage and would not rename it inside a
    bound value ("variables (a, y) are used, but are not passed in as API arguments")."""
    loads, read_as_bits, others = 0, 0, 0

    def visit(node: Any) -> None:
        nonlocal loads, read_as_bits, others
        if (
            isinstance(node, tvm.ir.Call)
            and str(getattr(node.op, "name", "")) == "tirx.reinterpret"
        ):
            read_as_bits += sum(_dtype(a) == "bfloat16" for a in node.args)
        elif isinstance(node, tvm.ir.TensorLoad) and _dtype(node) == "bfloat16":
            if any(node.source.same_as(buffer) for buffer in declared):
                others += 1
            loads += 1
        elif isinstance(getattr(node, "ty", None), tirx.BufferType):
            pass  # a buffer's handle, not a value
        elif _dtype(node).startswith("bfloat16"):
            others += 1

    tvm_ffi.structural_walk(value, (tvm.ir.Expr, visit), order="pre")
    return others == 0 and loads == read_as_bits


def _round_in_store(store: Any, declared: list[Any], bind_leaves: bool) -> Any:
    """``store`` with its conversions to bfloat16 rounded; a rounding nested in another
    one is bound to a variable first, so its value is written once (the rounding reads
    its operand four times: inlined, nested bfloat16 arithmetic grew fourfold per
    level, and a chain of eight operations took minutes to build). Unless
    ``bind_leaves``, a nested rounding of a value that holds no other rounding (``a *
    b`` in ``a * b + c``) is written in place: fourfold once, not per level."""
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
        is_nested = any(n.same_as(placeholder) for n in nested)
        is_leaf = not _mentions(value, placeholders)
        if is_nested and (bind_leaves or not is_leaf) and _legal_to_bind(plain, declared):
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


def _declared_buffers(stmt: tirx.Stmt) -> list[Any]:
    """The buffers ``stmt`` allocates or declares (not the kernel's parameters)."""
    found: list[Any] = []

    def visit(node: Any) -> None:
        found.append(node.buffer)

    tvm_ffi.structural_walk(stmt, [(tirx.AllocBuffer, visit), (tirx.DeclBuffer, visit)])
    return found


def _binds_rounding(stmt: tirx.Stmt) -> bool:
    found = False

    def visit(node: Any) -> None:
        nonlocal found
        found = found or str(node.var.name).startswith(_LOCAL_PREFIX)

    tvm_ffi.structural_walk(stmt, (tirx.Bind, visit), order="pre")
    return found


def serialize_bound_roundings(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every vectorized loop that binds a nested rounding made serial.

    TVM's vectorizer (``llvm``) cannot vectorize the bit arithmetic of a rounding and
    falls back to one scalar loop per statement of the body, so a binding ended its
    scope at the end of its own loop and the store read the last lane's value. A serial
    loop keeps each binding with its store (LLVM's own loop vectorizer may still
    vectorize it).
    """

    def loop(node: Any) -> Any:
        if node.kind != tirx.ForKind.VECTORIZED or not _binds_rounding(node.body):
            return node
        return rebuild_loop(node, kind=tirx.ForKind.SERIAL)

    return tvm_ffi.structural_map(stmt, (tirx.For, loop), order="post")


def round_bfloat16_conversions(
    stmt: tirx.Stmt, bind_nested: bool = True, bind_leaves: bool = True
) -> tirx.Stmt:
    """``stmt`` with every conversion to bfloat16 reading an explicitly rounded value.

    Args:
        stmt: the statement to rewrite.
        bind_nested: bind a rounding nested in another one to a variable, so nested
            bfloat16 arithmetic grows linearly (on ``llvm`` the vectorized loops holding
            such a binding must then be made serial: `serialize_bound_roundings`);
            False writes nested roundings out in place (fourfold growth per level).
        bind_leaves: bind a nested rounding whose value holds no other rounding too
            (``c``); False (``llvm``) writes it in place, so an expression with one
            level of nesting (``a * b + c``) keeps its vectorized loop.
    """
    stmt = tvm_ffi.structural_map(stmt, (tirx.Cast, _bfloat16_next_after), order="post")
    if bind_nested:
        declared = _declared_buffers(stmt)
        stmt = tvm_ffi.structural_map(
            stmt,
            (tirx.BufferStore, lambda store: _round_in_store(store, declared, bind_leaves)),
            order="post",
        )

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
    #: Bind nested roundings to variables (see `round_bfloat16_conversions`).
    bind_nested: bool = True

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its bfloat16 constants converted and stored as codes
        (`bfloat16_constants`), every conversion to bfloat16 rounded on the bits and, on
        ``llvm``, its vector loops that store one bfloat16 value to every lane or bind
        a rounding serial."""
        target = ctx.target
        llvm = target is not None and str(target.kind.name) == "llvm"
        body = round_bfloat16_conversions(
            bfloat16_constants_as_codes(body), self.bind_nested, bind_leaves=not llvm
        )
        if llvm:
            body = serialize_uniform_float8_stores(body, frozenset({"bfloat16"}))
            body = serialize_bound_roundings(body)
        return body
