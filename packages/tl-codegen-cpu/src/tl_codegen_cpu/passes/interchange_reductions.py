"""`cpu-interchange-reductions`: a reduction loop innermost moves out so the nest vectorizes.

TileLang programs written for CPUs spell a GEMM as scalar loops::

    for i, j, k in T.grid(bm, bn, bk):
        C_local[i, j] += A_local[i, k] * B_local[k, j]

With ``k`` innermost every step reads B down a column and carries a dependence
through ``C_local[i, j]``: nothing vectorizes. This pass swaps the innermost loop
with the one just outside it when the innermost loop is a reduction (the stored
element does not depend on it) and the outer one indexes the stored element, so
the nest becomes ``i, k, j`` with ``j`` innermost and marked parallel (each ``j``
updates its own element: one vector of C, a broadcast of A, a vector of B).

The result is bit-identical: every element still receives its updates in the same
order of ``k``. Conditions (else the nest is left alone): a perfect nest of serial
loops (min 0, constant extents, no annotations) whose body is one store; one of the store's
indices is the outer loop's variable and none mentions the innermost one; the stored buffer is read
only at exactly the stored element; no other buffer the body reads is the stored one
or shares its memory (a view of it, the buffer it views, another view of that: a
read through a view may be of another element, which the reordering would read
before or after its updates). Runs before `cpu-lower-parallel-loops`, which vectorizes the new innermost loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.buffer_views import memory_aliases, view_pairs
from tl_ir.launch import LOOP_KIND_KEY, rebuild_loop
from tl_ir.ops import const_int
from tl_passes.pass_base import PassContext, PrimFuncPass

#: The longest loop made parallel (vectorized) by the interchange.
MAX_VECTOR_EXTENT = 256


def _nest_loop(loop: tirx.For) -> bool:
    """A serial loop (plain or ``T.Parallel``) from 0 over a constant extent."""
    annotations = dict(loop.annotations.items()) if loop.annotations else {}
    kind = str(annotations.pop(LOOP_KIND_KEY, "parallel"))
    return (
        loop.kind == tirx.ForKind.SERIAL
        and not annotations
        and kind == "parallel"
        and const_int(loop.min) == 0
        and const_int(loop.extent) is not None
    )


def _mentions(expr: Any, var: tirx.Var) -> bool:
    found = [False]

    def visit(node: Any) -> None:
        if node.same_as(var):
            found[0] = True

    tvm_ffi.structural_walk(expr, (tvm.ir.Var, visit), order="post")
    return found[0]


def _reordered(top: tirx.For, views: list[tuple[Any, Any]]) -> tirx.Stmt | None:
    """The nest under ``top`` with its reduction loop outermost, or None (module doc)."""
    loops: list[tirx.For] = []
    node: Any = top
    while isinstance(node, tirx.For) and _nest_loop(node):
        loops.append(node)
        node = node.body
    store = node
    if len(loops) < 2 or not isinstance(store, tirx.BufferStore):
        return None
    indices = list(store.indices)
    reductions = [lp for lp in loops if not any(_mentions(i, lp.loop_var) for i in indices)]
    if len(reductions) != 1 or reductions[0].same_as(loops[0]):
        return None
    reduction = reductions[0]
    others = [lp for lp in loops if not lp.same_as(reduction)]
    # Each other loop is one index itself: distinct iterations store distinct elements.
    for loop in others:
        if not any(isinstance(i, tirx.Var) and i.same_as(loop.loop_var) for i in indices):
            return None
    loads: list[Any] = []
    tvm_ffi.structural_walk(store.value, (tvm.ir.TensorLoad, loads.append), order="post")
    aliases = memory_aliases(store.buffer, views)[1:]
    if any(load.source.same_as(b) for load in loads for b in aliases):
        return None
    for load in loads:
        if load.source.same_as(store.buffer) and not (
            len(load.indices) == len(indices)
            and all(
                tvm_ffi.structural_equal(a, b) for a, b in zip(load.indices, indices, strict=True)
            )
        ):
            return None
    body: tirx.Stmt = store
    for position, loop in enumerate(reversed(others)):
        extent = int(const_int(loop.extent) or 0)
        vector = position == 0 and extent <= MAX_VECTOR_EXTENT
        annotations = {LOOP_KIND_KEY: "parallel"} if vector else {}
        body = rebuild_loop(loop, body=body, annotations=annotations)
    # The nest's loops are serial from 0 (`_nest_loop`); the reduction loop loses its
    # T.Parallel mark: its iterations all update the same elements.
    return rebuild_loop(reduction, body=body, annotations=None)


def interchange_reductions(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every qualifying reduction nest reordered (module doc)."""
    views = view_pairs(stmt)

    def rewrite(loop: tirx.For) -> tirx.Stmt:
        result = _reordered(loop, views)
        return loop if result is None else result

    return tvm_ffi.structural_map(stmt, (tirx.For, rewrite), order="post")


@dataclass(frozen=True)
class CpuInterchangeReductionsPass(PrimFuncPass):
    """Move an innermost reduction loop outward so the nest vectorizes (module doc)."""

    name: ClassVar[str] = "cpu-interchange-reductions"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its reduction nests interchanged."""
        return interchange_reductions(body)
