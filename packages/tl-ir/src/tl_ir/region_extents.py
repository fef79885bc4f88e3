"""Tile-op region extents that equal a constant without being written as one.

TileLang programs slice tiles between two computed bounds, ``KV[kv_start:kv_end]``
with ``kv_start = base + k * block_N`` and ``kv_end = base + (k + 1) * block_N``
bound earlier in the body. The extent ``kv_end - kv_start`` is ``block_N``, but only
once the two bindings are substituted: the backends need tile extents that are
integers. `fold_region_extents` substitutes the body's scalar bindings into each
non-constant extent of a ``tl.region`` operand and keeps the result where TVM's
arithmetic analyzer simplifies it to an integer; other extents stay as written.

A scalar the body assigns (``x = expr`` becomes a one-element local variable and a
store) counts as a binding when it is stored exactly once; the substitution is used
only when no other assigned scalar is left in the result (a scalar stored twice
could change between the two bounds' assignments, so nothing is proved about it).
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

__all__ = ["fold_region_extents"]


def _is_scalar(buffer: Any) -> bool:
    """Whether ``buffer`` is a scalar variable (``x = expr`` in a kernel body): one
    element of local scope, named in expressions by its own variable."""
    ty = getattr(buffer, "ty", None)
    if not isinstance(ty, tirx.BufferType) or str(ty.storage_scope) != "local":
        return False
    return all(isinstance(e, tirx.IntImm) and int(e.value) == 1 for e in ty.shape)


def _bindings(body: Any) -> tuple[dict[Any, Any], list[Any]]:
    """The scalar variables the body binds once (``x = expr``) with their values, and
    every assigned scalar variable (to refuse results that still name one)."""
    found: dict[Any, Any] = {}
    stores: dict[Any, list[Any]] = {}

    def visit(node: Any) -> None:
        if isinstance(node, tirx.Bind | tirx.LetStmt):
            found[node.var] = node.value
        elif isinstance(node, tirx.BufferStore) and _is_scalar(node.buffer):
            stores.setdefault(node.buffer, []).append(node.value)

    tvm_ffi.structural_walk(body, visit, order="pre")
    for variable, values in stores.items():
        if len(values) == 1:
            found[variable] = values[0]
    return found, list(stores)


def _lookup(bindings: dict[Any, Any], var: Any) -> Any:
    for key, value in bindings.items():
        if var.same_as(key):
            return value
    return None


def _substitute(expr: Any, bindings: dict[Any, Any], depth: int = 8) -> Any:
    """``expr`` with bound variables (let-bound Vars, loads of once-assigned scalars)
    replaced by their values, nested up to ``depth`` levels."""

    def load(node: Any) -> Any:
        value = _lookup(bindings, node.source)
        return node if value is None else value

    def var(node: Any) -> Any:
        value = _lookup(bindings, node)
        return node if value is None or not isinstance(node.ty, tvm.ir.PrimType) else value

    for _ in range(depth):
        replaced = tvm_ffi.structural_map(expr, (tvm.ir.TensorLoad, load), order="post")
        replaced = tvm_ffi.structural_map(replaced, (tvm.ir.Var, var), order="post")
        if replaced.same_as(expr) or tvm_ffi.structural_equal(replaced, expr):
            return replaced
        expr = replaced
    return expr


def _names_assigned(expr: Any, assigned: list[Any]) -> bool:
    hit = [False]

    def visit(node: Any) -> None:
        if isinstance(node, tvm.ir.TensorLoad) and any(node.source.same_as(a) for a in assigned):
            hit[0] = True

    tvm_ffi.structural_walk(expr, visit, order="pre")
    return hit[0]


def fold_region_extents(body: Any) -> Any:
    """``body`` with every region extent that simplifies to an integer made that integer."""
    bindings, assigned = _bindings(body)
    if not bindings:
        return body
    analyzer = tvm.sym.Analyzer()

    def fold(call: Any) -> Any:
        if str(getattr(call.op, "name", "")) != "tl.region" or len(call.args) < 3:
            return call
        args = list(call.args)
        changed = False
        for position in range(2, len(args)):
            extent = args[position]
            if isinstance(extent, tirx.IntImm):
                continue
            substituted = _substitute(extent, bindings)
            if _names_assigned(substituted, assigned):
                continue
            simplified = analyzer.simplify(substituted)
            if isinstance(simplified, tirx.IntImm):
                args[position] = tirx.IntImm(str(extent.dtype), int(simplified.value))
                changed = True
        if not changed:
            return call
        return tirx.call_intrin("handle", "tl.region", *args)

    return tvm_ffi.structural_map(body, (tvm.ir.Call, fold), order="post")
