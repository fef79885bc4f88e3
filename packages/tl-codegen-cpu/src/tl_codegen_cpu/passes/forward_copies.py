"""`cpu-forward-copies`: an elementwise ``T.Parallel`` loop reads and writes global memory directly.

The staged form ``T.copy(G_k -> L_k)``... ; ``for i, j in T.Parallel: Lo[i, j] =
f(L_k[i, j], ...)``; ``T.copy(Lo -> G_out)`` moves every element through L1
three more times than needed. When it is provably equivalent, this pass
rewrites it as one loop nest ``G_out[o + (i, j)] = f(G_k[s_k + (i, j)], ...)``.

Conservative pattern (anything else is left alone), inside one statement
sequence of a block:

* a perfect nest of ``T.Parallel`` loops (min 0, constant extents) whose body
  is one store ``Lo[i, j, ...] = value`` indexed by the loop variables in order;
* the statement right after it is ``T.copy`` of the whole of ``Lo`` to a
  region of a buffer that is not block-local, with the same extents;
* every block-local buffer the value reads is read only at ``[i, j, ...]`` and
  was filled by a ``T.copy`` of its whole self from a non-local region of the
  same extents; those copies come directly before the nest (nothing in
  between), in the same sequence;
* each forwarded block-local buffer (``Lo`` and the read ones) is allocated in
  this sequence and appears nowhere else in it; the output buffer is not one
  of the sources and the value does not read it.

Partial tiles keep their meaning: a source element outside its buffer reads
as 0 (as ``T.copy`` pads) and a destination element outside its buffer is not
written. The rewrite emits two nests behind a test whether the whole tile is
inside every buffer: the full-tile nest has no guard (it vectorizes), the
partial one guards each element. Runs before `cpu-lower-tile-ops`. The
forwarded arrays' allocations stay (unused; they cost nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.ops import CopyOp, Region, const_int, describe, is_tile_op
from tl_passes.pass_base import PassContext, PrimFuncPass

LOOP_KIND_KEY = "tl.loop_kind"


def _copy_op(stmt: tirx.Stmt) -> CopyOp | None:
    if isinstance(stmt, tirx.Evaluate) and is_tile_op(stmt.value):
        op = describe(stmt.value)
        if isinstance(op, CopyOp):
            return op
    return None


def _parallel_nest(stmt: tirx.Stmt) -> tuple[list[tirx.For], tirx.BufferStore] | None:
    loops: list[tirx.For] = []
    node: Any = stmt
    while isinstance(node, tirx.For):
        annotations = dict(node.annotations.items()) if node.annotations else {}
        if str(annotations.get(LOOP_KIND_KEY, "")) != "parallel":
            return None
        if const_int(node.min) != 0 or const_int(node.extent) is None:
            return None
        loops.append(node)
        node = node.body
    if not loops or not isinstance(node, tirx.BufferStore):
        return None
    return loops, node


def _is_loop_index(indices: Any, loop_vars: list[tirx.Var]) -> bool:
    return len(indices) == len(loop_vars) and all(
        isinstance(index, tirx.Var) and index.same_as(var)
        for index, var in zip(indices, loop_vars, strict=True)
    )


def _shape(buffer: Any) -> tuple[int | None, ...]:
    return tuple(const_int(extent) for extent in buffer.ty.shape)


def _region_matches(region: Region, extents: tuple[int, ...]) -> bool:
    return region.rank == len(extents) and region.const_extents == extents


def _whole(region: Region, extents: tuple[int, ...]) -> bool:
    return region.is_full and _shape(region.buffer) == extents


def _inside(region: Region, index: list[Any]) -> Any | None:
    """The condition that ``region.mins + index`` lies inside the buffer; None when always."""
    conditions = []
    for start, offset, size in zip(region.mins, index, region.buffer.ty.shape, strict=True):
        element = start + offset
        conditions.append(tirx.all(element >= 0, element < size))
    return tirx.all(*conditions) if conditions else None


def _region_full(region: Region, extents: tuple[int, ...]) -> Any:
    conditions = []
    for start, extent, size in zip(region.mins, extents, region.buffer.ty.shape, strict=True):
        conditions.append(tirx.all(start >= 0, start + extent <= size))
    return tirx.all(*conditions)


def _count_uses(stmt: tirx.Stmt, buffer: Any) -> int:
    count = 0

    def visit_store(node: Any) -> None:
        nonlocal count
        count += bool(node.buffer.same_as(buffer))

    def visit_load(node: Any) -> None:
        nonlocal count
        count += bool(node.source.same_as(buffer))

    tvm_ffi.structural_walk(
        stmt, [(tirx.BufferStore, visit_store), (tvm.ir.TensorLoad, visit_load)], order="post"
    )
    return count


def _convert(value: Any, dtype: str) -> Any:
    return value if str(value.ty.dtype) == dtype else tirx.Cast(dtype, value)


def _local_reads(
    value: Any, loop_vars: list[tirx.Var], allocated: list[Any], destination: Any
) -> list[Any] | None:
    """The block-local buffers ``value`` reads, or None when it reads one at another
    index than the loop variables, or reads ``destination`` (fused, the loop would
    see its own writes)."""
    reads: list[Any] = []
    bad = False

    def visit(load: Any) -> None:
        nonlocal bad
        if load.source.same_as(destination):
            bad = True
        if not any(load.source.same_as(b) for b in allocated):
            return
        if not _is_loop_index(load.indices, loop_vars):
            bad = True
        elif not any(load.source.same_as(b) for b in reads):
            reads.append(load.source)

    tvm_ffi.structural_walk(value, (tvm.ir.TensorLoad, visit), order="post")
    return None if bad else reads


def _forward_once(seq: list[tirx.Stmt]) -> list[tirx.Stmt] | None:
    """One forwarding in ``seq`` (the new sequence), or None when none applies."""
    allocated = [s.buffer for s in seq if isinstance(s, tirx.AllocBuffer)]

    def is_local(buffer: Any) -> bool:
        return any(buffer.same_as(b) for b in allocated)

    whole = tirx.SeqStmt(seq)
    for position, stmt in enumerate(seq[:-1]):
        nest = _parallel_nest(stmt)
        copy_out = _copy_op(seq[position + 1])
        if nest is None or copy_out is None:
            continue
        loops, store = nest
        loop_vars = [loop.loop_var for loop in loops]
        extents = tuple(int(const_int(loop.extent) or 0) for loop in loops)
        out_tile = store.buffer
        if not (is_local(out_tile) and _is_loop_index(store.indices, loop_vars)):
            continue
        if not copy_out.src.buffer.same_as(out_tile) or not _whole(copy_out.src, extents):
            continue
        destination = copy_out.dst
        if is_local(destination.buffer) or not _region_matches(destination, extents):
            continue
        reads = _local_reads(store.value, loop_vars, allocated, destination.buffer)
        if reads is None:
            continue
        # The copies filling them: directly before the nest.
        sources: dict[int, Region] = {}
        first = position
        while first > 0:
            copy_in = _copy_op(seq[first - 1])
            if copy_in is None:
                break
            index = next((k for k, b in enumerate(reads) if copy_in.dst.buffer.same_as(b)), None)
            if index is None or index in sources:
                break
            if not _whole(copy_in.dst, extents) or not _region_matches(copy_in.src, extents):
                break
            if is_local(copy_in.src.buffer):
                break
            sources[index] = copy_in.src
            first -= 1
        if len(sources) != len(reads):
            continue
        if any(destination.buffer.same_as(s.buffer) for s in sources.values()):
            continue
        # Each forwarded tile: used only by its copy-in, the nest and the copy-out.
        tiles = [*reads] + ([] if any(out_tile.same_as(b) for b in reads) else [out_tile])
        used_elsewhere = False
        for tile in tiles:
            expected = sum(_count_uses(s, tile) for s in seq[first : position + 2])
            if _count_uses(whole, tile) != expected:
                used_elsewhere = True
        if used_elsewhere:
            continue
        replacement = _fused_nest(loops, store, reads, sources, destination, extents)
        return [*seq[:first], replacement, *seq[position + 2 :]]
    return None


def _fused_nest(
    loops: list[tirx.For],
    store: tirx.BufferStore,
    reads: list[Any],
    sources: dict[int, Region],
    destination: Region,
    extents: tuple[int, ...],
) -> tirx.Stmt:
    loop_vars = [loop.loop_var for loop in loops]

    def nest(guarded: bool) -> tirx.Stmt:
        def substitute(load: Any) -> Any:
            index = next((k for k, b in enumerate(reads) if load.source.same_as(b)), None)
            if index is None:
                return load
            source = sources[index]
            element = [m + v for m, v in zip(source.mins, loop_vars, strict=True)]
            value = _convert(tirx.BufferLoad(source.buffer, element), str(load.source.ty.dtype))
            if guarded:
                inside = _inside(source, list(loop_vars))
                if inside is not None:
                    value = tirx.if_then_else(inside, value, tirx.const(0, str(value.ty.dtype)))
            return value

        value = tvm_ffi.structural_map(store.value, (tvm.ir.TensorLoad, substitute), order="post")
        target = [m + v for m, v in zip(destination.mins, loop_vars, strict=True)]
        body: tirx.Stmt = tirx.BufferStore(
            destination.buffer, _convert(value, str(destination.buffer.ty.dtype)), target
        )
        if guarded:
            inside = _inside(destination, list(loop_vars))
            if inside is not None:
                body = tirx.IfThenElse(inside, body, None)
        for loop in reversed(loops):
            body = tirx.For(
                loop.loop_var,
                loop.min,
                loop.extent,
                loop.kind,
                body,
                annotations=dict(loop.annotations.items()),
            )
        return body

    full = tirx.all(*[_region_full(r, extents) for r in [destination, *sources.values()]])
    return tirx.IfThenElse(full, nest(guarded=False), nest(guarded=True))


def forward_copies(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every matching staged elementwise loop forwarded (module doc)."""

    def rewrite(seq_stmt: tirx.SeqStmt) -> tirx.Stmt:
        seq = list(seq_stmt.seq)
        changed = False
        while True:
            result = _forward_once(seq)
            if result is None:
                break
            seq, changed = result, True
        return tirx.SeqStmt(seq) if changed else seq_stmt

    return tvm_ffi.structural_map(stmt, (tirx.SeqStmt, rewrite), order="post")


@dataclass(frozen=True)
class CpuForwardCopiesPass(PrimFuncPass):
    """Forward ``T.copy`` staging into the ``T.Parallel`` loop that consumes it (module doc)."""

    name: ClassVar[str] = "cpu-forward-copies"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its matching staged loops forwarded."""
        return forward_copies(body)
