"""Fused ``T.Parallel`` loops indexed through ``// c`` and ``% c`` become two nested loops.

TileLang programs often walk a 2-D tile with one flat loop,
``for i in T.Parallel(M * N): B[.., i // N, .., i % N] = ...``. On a CPU every
element then pays a division and a remainder, and neither compiler vectorizes
the loop (the addresses are not affine in ``i``). When a ``T.Parallel`` loop
(min 0, constant extent ``E``) uses its variable through ``i // c`` or ``i % c``
for constants ``c`` that are all multiples of the smallest one, ``c0``, and
``c0`` divides ``E`` (``1 < c0 < E``), the loop becomes two ``T.Parallel``
loops ``i_outer`` (``E / c0``) and ``i_inner`` (``c0``) with ``i = i_outer * c0 +
i_inner``; the simplifier then turns ``i // c0`` into ``i_outer`` and ``i % c0``
into ``i_inner``, so the inner loop is a contiguous, vectorizable run. The
iterations and their order are unchanged (the same ``i`` in the same order).
Repeated until no loop qualifies (``i // 1024`` and ``i % 32`` split twice).
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.launch import LOOP_KIND_KEY
from tl_ir.ops import const_int
from tl_passes.buffer_rewrite import substitute_vars


def _is_parallel(loop: tirx.For) -> bool:
    annotations = dict(loop.annotations.items()) if loop.annotations else {}
    return str(annotations.get(LOOP_KIND_KEY, "")) == "parallel"


def _divisors_used(body: tirx.Stmt, var: tirx.Var) -> list[int]:
    """The constants ``c`` of every ``var // c`` and ``var % c`` in ``body``."""
    found: list[int] = []

    def visit(node: Any) -> None:
        if isinstance(node.a, tirx.Var) and node.a.same_as(var):
            divisor = const_int(node.b)
            found.append(divisor if divisor is not None else 0)

    tvm_ffi.structural_walk(body, [(tirx.FloorDiv, visit), (tirx.FloorMod, visit)], order="post")
    return found


def _split_factor(loop: tirx.For) -> int | None:
    extent = const_int(loop.extent)
    if extent is None or const_int(loop.min) != 0:
        return None
    divisors = _divisors_used(loop.body, loop.loop_var)
    if not divisors or min(divisors) <= 1:
        return None
    factor = min(divisors)
    if factor >= extent or extent % factor or any(d % factor for d in divisors):
        return None
    return factor


def _simplify_divmod(
    body: tirx.Stmt, outer: tirx.Var, inner: tirx.Var, sizes: tuple[int, int]
) -> Any:
    """``body`` with its ``//`` and ``%`` nodes simplified knowing the two loops' ranges."""
    analyzer = tvm.sym.Analyzer()
    analyzer.bind(outer, tvm.ir.Range(0, sizes[0]))
    analyzer.bind(inner, tvm.ir.Range(0, sizes[1]))

    def simplify(node: Any) -> Any:
        return analyzer.simplify(node)

    return tvm_ffi.structural_map(
        body, [(tirx.FloorDiv, simplify), (tirx.FloorMod, simplify)], order="post"
    )


def split_divmod_loops(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with its fused ``T.Parallel`` loops split (module doc)."""

    def rewrite(loop: tirx.For) -> tirx.Stmt:
        if not _is_parallel(loop):
            return loop
        factor = _split_factor(loop)
        if factor is None:
            return loop
        extent = int(const_int(loop.extent) or 0)
        name = str(loop.loop_var.name)
        outer = tirx.Var(f"{name}_outer", str(loop.loop_var.ty.dtype))
        inner = tirx.Var(f"{name}_inner", str(loop.loop_var.ty.dtype))
        body = substitute_vars(loop.body, {loop.loop_var: outer * factor + inner})
        body = _simplify_divmod(body, outer, inner, (extent // factor, factor))
        annotations = dict(loop.annotations.items())
        inner_loop = tirx.For(inner, 0, factor, loop.kind, body, annotations=annotations)
        # The outer loop may itself be indexed through // and % (split again).
        return rewrite(
            tirx.For(outer, 0, extent // factor, loop.kind, inner_loop, annotations=annotations)
        )

    return tvm_ffi.structural_map(stmt, (tirx.For, rewrite), order="post")
