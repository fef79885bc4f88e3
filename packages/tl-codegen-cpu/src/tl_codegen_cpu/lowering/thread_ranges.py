"""A thread loop cut to the threads its guards let through (used by `cpu-lower-launch`).

CUDA-style kernels finish a block with work for a few threads: ``if tx < 32:``
(the first warp reduces the warps' partials), ``if tx == 0:`` (one thread stores
the block's result). In a region's nest over the threads that is a loop over every
thread testing the condition each time (``for tx in range(256): if tx < 32: ...``),
and the loop costs as much as the block's real work when the block's rows are short.

When every statement of a thread loop's body is a branch without ``else`` whose
condition holds only below a constant bound on that thread index (``tx < c``,
``tx <= c``, ``tx == c``, or a conjunction with one of them), the other iterations
do nothing, so the loop runs over ``min(extent, bound)`` threads instead. The
conditions stay (they may say more than the bound); the simplifier removes the ones
the shorter loop makes true.
"""

from __future__ import annotations

from typing import Any

import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import flatten_seq
from tl_ir.ops import const_int
from tl_passes.buffer_rewrite import substitute_vars


def _upper_bound(condition: Any, var: Any) -> int | None:
    """A constant ``b`` with ``condition => var < b``, or None."""
    if isinstance(condition, tirx.And):
        bounds = [b for b in (_upper_bound(condition.a, var), _upper_bound(condition.b, var)) if b]
        return min(bounds) if bounds else None
    if isinstance(condition, tirx.LT | tirx.LE | tirx.EQ) and condition.a.same_as(var):
        limit = const_int(condition.b)
        if limit is None:
            return None
        return limit if isinstance(condition, tirx.LT) else limit + 1
    if isinstance(condition, tirx.GT | tirx.GE) and condition.b.same_as(var):
        limit = const_int(condition.a)
        if limit is None:
            return None
        return limit if isinstance(condition, tirx.GT) else limit + 1
    return None


def cut_thread_loops(nest: Any, threads: tuple[Any, ...]) -> tuple[Any, list[str]]:
    """``nest`` with each of its thread loops (over a Var of ``threads``) cut to the
    threads its body's guards let through (module docstring; each cut loop gets a Var
    of its own), and a note per cut. Run last on a nest: later steps would no longer
    recognize the loop as a thread loop."""
    notes: list[str] = []

    def cut(loop: Any) -> Any:
        if not any(loop.loop_var.same_as(t) for t in threads) or const_int(loop.min) != 0:
            return loop
        extent = const_int(loop.extent)
        if extent is None:
            return loop
        bounds: list[int] = []
        for statement in flatten_seq(loop.body):
            if not isinstance(statement, tirx.IfThenElse) or statement.else_case is not None:
                return loop
            bound = _upper_bound(statement.condition, loop.loop_var)
            if bound is None:
                return loop
            bounds.append(bound)
        reached = max(0, min(extent, max(bounds)))
        if reached >= extent:
            return loop
        notes.append(f"{loop.loop_var.name} < {reached} only")
        # A Var of its own: the other regions' loops bind the thread Var to the whole
        # block (the simplifier refuses one Var bound to two ranges).
        var = loop.loop_var
        fresh = tirx.Var(var.name, var.ty.dtype)
        body = substitute_vars(loop.body, {var: fresh})
        extent_of = tirx.const(reached, str(loop.extent.ty.dtype))
        return tirx.For(fresh, loop.min, extent_of, loop.kind, body, annotations=loop.annotations)

    return tvm_ffi.structural_map(nest, (tirx.For, cut), order="post"), notes
