"""Lock-step lane loops with a halved index as loops over pairs (used by `thread_lockstep`).

In lock step (`thread_lockstep`) a thread's innermost loop and the thread index
become one vector loop ``f = t * 8 + k``. Where the threads read packed data,
two 4-bit values per byte as TileLang's dequantizing GEMVs do, the fused index
appears halved::

    for f in T.vectorized(256):
        acc[f] = acc[f] + A[f] * dequant(B_packed[f // 2] >> f % 2 * 4)

``f // 2`` and ``f % 2`` are not affine in ``f``, so gcc does not vectorize the
loop (one element at a time: ``c`` was 3.5-4.2x numpy on that GEMV, LLVM's
vectorizer 0.35-0.43x). Written over groups of ``F`` consecutive elements
(``f = F * p + h`` for ``h < F``, each ``h`` its own statement), the halved
index is ``p`` and the shift a constant per statement::

    for p in T.vectorized(128):
        acc[2p] = acc[2p] + A[2p] * dequant(B_packed[p] >> 0)
        acc[2p + 1] = acc[2p + 1] + A[2p + 1] * dequant(B_packed[p] >> 4)

which gcc vectorizes (interleaved groups of two). A vector loop's iterations
are independent (that is what its kind states), so running iterations ``2p``
and ``2p + 1`` one after the other is the same computation per element.

Taken only for a vector loop from 0 of constant extent whose body is straight-line
stores, whose index appears under a floor division or modulo by a constant, and
for the smallest ``F`` in `GROUP_SIZES` dividing the extent after which no floor
division or modulo of the group index is left; otherwise the loop stays as it is
(the fallback). `pair_lane_loops` says which was done, and the lock-step
description in the nest's ``tl.cpu_thread_path`` (TL_DUMP_IR) carries it.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import flatten_seq, uses_any
from tl_ir.ops import const_int
from tl_passes.buffer_rewrite import substitute_vars

#: Group sizes tried, smallest first (two, four, eight packed values per byte).
GROUP_SIZES = (2, 4, 8)

_NON_AFFINE = (tirx.FloorDiv, tirx.FloorMod)


def _non_affine_use(stmt: Any, var: Any) -> bool:
    """Whether ``var`` appears under a floor division or modulo in ``stmt``."""
    found = False

    def visit(node: Any) -> None:
        nonlocal found
        if uses_any(node.a, {var}):
            found = True

    tvm_ffi.structural_walk(stmt, [(kind, visit) for kind in _NON_AFFINE], order="post")
    return found


def _simplified(store: Any, analyzer: Any) -> Any:
    indices = [analyzer.simplify(i) for i in store.indices]
    return tirx.BufferStore(store.buffer, analyzer.simplify(store.value), indices)


def _grouped(loop: Any, group: int) -> Any | None:
    """``loop`` over groups of ``group`` elements, or None if an index stays non-affine."""
    extent = int(loop.extent.value)
    pair = tirx.Var(f"{loop.loop_var.name}_pair", "int32")
    analyzer = tvm.sym.Analyzer()
    analyzer.bind(pair, tvm.ir.Range(0, extent // group))
    stores: list[Any] = []
    for offset in range(group):
        element = pair * group + offset if offset else pair * group
        body = substitute_vars(loop.body, {loop.loop_var: element})
        stores.extend(_simplified(s, analyzer) for s in flatten_seq(body))
    grouped = tirx.SeqStmt(stores)
    if _non_affine_use(grouped, pair):
        return None
    return tirx.For(
        pair, 0, extent // group, tirx.ForKind.VECTORIZED, grouped, annotations=loop.annotations
    )


def _pair_loop(loop: Any, notes: list[str]) -> Any:
    extent = const_int(loop.extent)
    if (
        loop.kind != tirx.ForKind.VECTORIZED
        or const_int(loop.min) != 0
        or extent is None
        or not all(isinstance(s, tirx.BufferStore) for s in flatten_seq(loop.body))
        or not _non_affine_use(loop.body, loop.loop_var)
    ):
        return loop
    for group in GROUP_SIZES:
        if extent % group != 0:
            break
        grouped = _grouped(loop, group)
        if grouped is not None:
            notes.append(
                f"{loop.loop_var.name} as {extent // group} groups of {group} "
                f"(its // and % by {group} affine)"
            )
            return grouped
    notes.append(f"{loop.loop_var.name} keeps a non-affine // or % of its index (scalar on c)")
    return loop


def pair_lane_loops(stmt: Any) -> tuple[Any, list[str]]:
    """``stmt`` with each vector loop whose index appears only halved (quartered, ...)
    written over groups of consecutive elements (module docstring), and one note per
    such loop: the grouping taken, or that it stays as it is."""
    notes: list[str] = []
    rewritten = tvm_ffi.structural_map(
        stmt, (tirx.For, lambda loop: _pair_loop(loop, notes)), order="post"
    )
    return rewritten, notes
