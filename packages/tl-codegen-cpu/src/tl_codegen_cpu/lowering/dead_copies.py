"""Copies into memory that the same block overwrites before anything reads them go.

A program may copy a tile into an output and then overwrite it
(``T.copy(A[r], B[r])`` followed by ``for i in T.Parallel(n): B[r0 + i] = v``).
On a GPU the dead copy costs a little bandwidth; on a CPU its loads of ``A``
can cost as much as the whole kernel (gcc does not remove them: its dead-store
elimination does not see a scalar store covered by a later vector store). In one
statement sequence, a ``T.copy`` whose destination region (constant extents)
is entirely rewritten by a later perfect ``T.Parallel`` nest, with no statement
in between (nor the nest's value) mentioning the destination buffer otherwise,
is removed. The nest must store at ``base_d + v_d`` (one loop variable per dim,
coefficient 1, no branch): then it writes every element of
``[base_d, base_d + extent_d)``, and the copy's region must lie inside that box.
Nothing else observes the removed stores (a block's own later reads are what
the scan rules out; another block reading them would race). A view of the
destination (``T.reshape``, ``T.view``, ``T.Tensor(shape, dtype, B.data)``, views of
views) is the destination: naming any buffer sharing its memory counts as
mentioning it, in the overwriting nest's value as well as in between.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.buffer_views import memory_aliases, view_pairs
from tl_codegen_cpu.lowering.forward_chains import parallel_nest, tile_op, vars_used
from tl_ir.ops import CopyOp, Region, const_int


def _mentions(node: Any, group: list[Any]) -> bool:
    return any(var.same_as(b) for var in vars_used(node) for b in group)


def _covered_box(stmt: tirx.Stmt, buffer: Any, group: list[Any]) -> list[tuple[Any, int]] | None:
    """``[(base, extent)]`` per dim when ``stmt`` is a perfect ``T.Parallel`` nest writing
    every element of that box of ``buffer`` and reading nothing of it (nor of any buffer
    of ``group``, its views), else None."""
    nest = parallel_nest(stmt)
    if nest is None:
        return None
    loops, store = nest
    if not isinstance(store, tirx.BufferStore) or not store.buffer.same_as(buffer):
        return None
    if _mentions(store.value, group) or any(_mentions(i, group) for i in store.indices):
        return None
    loop_vars = [loop.loop_var for loop in loops]
    box: list[tuple[Any, int]] = []
    used: list[Any] = []
    for index in store.indices:
        found = None
        for var, loop in zip(loop_vars, loops, strict=True):
            base = tvm.sym.Analyzer().simplify(index - var)
            if not any(v.same_as(var) for v in vars_used(base)):
                found = (var, base, int(const_int(loop.extent) or 0))
                break
        if found is None or any(found[0].same_as(v) for v in used):
            return None
        if any(any(v.same_as(w) for w in loop_vars) for v in vars_used(found[1])):
            return None  # the base must not move with another loop of the nest
        used.append(found[0])
        box.append((found[1], found[2]))
    return box


def _inside(region: Region, box: list[tuple[Any, int]]) -> bool:
    if region.rank != len(box):
        return False
    analyzer = tvm.sym.Analyzer()
    for start, extent, (base, size) in zip(region.mins, region.extents, box, strict=True):
        if not analyzer.can_prove(tirx.all(base <= start, start + extent <= base + size)):
            return False
    return True


def _overwritten(
    seq: list[tirx.Stmt], position: int, op: CopyOp, views: list[tuple[Any, Any]]
) -> bool:
    buffer = op.dst.buffer
    group = memory_aliases(buffer, views)
    if None in op.dst.const_extents or any(op.src.buffer.same_as(b) for b in group):
        return False
    for later in seq[position + 1 :]:
        if not _mentions(later, group):
            continue
        box = _covered_box(later, buffer, group)
        if box is None:
            return False  # read (or written in a way not analysed) before it is covered
        if _inside(op.dst, box):
            return True
    return False


def drop_overwritten_copies(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` without the copies a later nest overwrites unread (module doc)."""
    views = view_pairs(stmt)

    def rewrite(seq_stmt: tirx.SeqStmt) -> tirx.Stmt:
        seq = list(seq_stmt.seq)
        kept = []
        for position, part in enumerate(seq):
            op = tile_op(part)
            if isinstance(op, CopyOp) and _overwritten(seq, position, op, views):
                continue
            kept.append(part)
        if len(kept) == len(seq):
            return seq_stmt
        if not kept:
            return tirx.Evaluate(tirx.const(0, "int32"))
        return kept[0] if len(kept) == 1 else tirx.SeqStmt(kept)

    return tvm_ffi.structural_map(stmt, (tirx.SeqStmt, rewrite), order="post")
