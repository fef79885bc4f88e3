"""`cpu-forward-copies`: GPU-style staging through block-local tiles becomes direct loops.

TileLang programs stage every tile the GPU way: ``T.copy`` global -> shared ->
fragment, elementwise ``T.Parallel`` stages, then fragment -> shared -> global.
On a CPU each hop is one more pass over the tile in L1. This pass follows the
values through such a chain and writes, for each store to memory that is not
block-local, one loop nest computing the value straight from the global sources:
every element is loaded once and stored once, and the staging tiles disappear.

Inside one statement sequence of a block, a *chain* is a run of consecutive
statements, each one of:

* ``T.copy(G[r] -> L)``: a non-local region into the whole of a block-local tile
  ``L`` with the same extents (``L`` then holds ``G[r.mins + p]``, 0 outside ``G``,
  as ``T.copy`` pads);
* ``T.copy(L -> M)``: a whole local tile into the whole of another of the same
  extents;
* ``T.fill(L, v)`` / ``T.clear(L)`` of a whole local tile;
* a perfect ``T.Parallel`` nest (min 0, constant extents) whose body is one store,
  either into a whole local tile, at the loop variables or at their row-major
  offset in a tile of as many elements (``B[i * N + j]``), or to a non-local
  buffer at any index; the value reads local tiles only at the loop variables
  (tiles of the nest's extents) and may read anything else;
* ``T.copy(L -> G[r])``: a whole local tile to a non-local region of its extents;
* a same-dtype view of a local tile (``T.reshape``), read like a tile.

Tiles share one row-major element order, so a value written over one shape is
read over another (a view, a flat tile read by a flat loop) through flat offsets
(`forward_values`). The value of each local tile is tracked symbolically
through the chain; every store to a non-local buffer becomes one nest
evaluating it there. A local tile qualifies only when all its uses in the
sequence lie inside the chain (a tile a ``T.gemm`` or a reduction also reads
stays staged, and so do the statements that touch it; a view goes with the
tile it views). The rewrite is refused (the chain stays as it is) when a tile is
read before the chain writes it, read at another index than the loop variables
(a transposing read keeps its gather in L1), written through a view, or when a
value would read a non-local buffer after the chain has written it (except the
same element, as in-place updates do). The allocations of forwarded tiles go.

Partial tiles keep their meaning. Each output nest sits behind a test whether
the whole tile lies inside every buffer it touches: then the nest has no guard
(it vectorizes). Otherwise a second nest runs over the part of the destination
inside its buffer only (clipped loop bounds, no per-element store guard, so the
compilers still vectorize it); a source whose tile is not placed exactly like the
destination's (same buffer shape and offsets, every element at its own
position) reads 0 outside its buffer through a per-element select.

Before the chains are found, a kernel-private ``T.alloc_global`` workspace that
each block uses as one tile becomes a tile (`workspace_tiles`), and a copy that
a later ``T.Parallel`` nest overwrites unread goes (`dead_copies`); afterwards,
``T.Parallel`` loops indexed through ``i // c`` and ``i % c`` are split into two
loops (`divmod_loops`), so flat loops become contiguous inner loops. Runs before
`cpu-lower-tile-ops`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.dead_copies import drop_overwritten_copies
from tl_codegen_cpu.lowering.divmod_loops import split_divmod_loops
from tl_codegen_cpu.lowering.forward_chains import (
    const_shape,
    element_atomic,
    find_chains,
    local_views,
    member,
    parallel_nest,
    tile_op,
    vars_used,
)
from tl_codegen_cpu.lowering.forward_values import (
    TileValue,
    bounded_analyzer,
    convert,
    copy_value,
    placeholders,
    reshaped,
    row_major,
    same,
)
from tl_codegen_cpu.lowering.workspace_tiles import localize_workspace_regions
from tl_ir.float_division import zero_operands_kept
from tl_ir.launch import LOOP_KIND_KEY, rebuild_loop
from tl_ir.ops import AtomicOp, CopyOp, FillOp, Region, const_int, viewed_buffer
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass


class _Refused(Exception):
    """The chain cannot be forwarded safely (it is left as it is)."""


def _is_loop_index(indices: Any, loop_vars: list[tirx.Var]) -> bool:
    return len(indices) == len(loop_vars) and all(
        isinstance(index, tirx.Var) and index.same_as(var)
        for index, var in zip(indices, loop_vars, strict=True)
    )


def _flat_store(store: Any, loop_vars: list[tirx.Var], extents: tuple[int, ...]) -> bool:
    """Whether ``store`` writes its tile at the row-major offset of the loop variables in
    ``extents``, the tile having as many elements (every element once, ``B[i * N + j]``)."""
    shape = const_shape(store.buffer)
    if None in shape or math.prod(int(e or 0) for e in shape) != math.prod(extents):
        return False
    analyzer = bounded_analyzer(loop_vars, extents)
    offset = row_major(list(store.indices), [int(e or 0) for e in shape])
    return bool(analyzer.can_prove_equal(offset, row_major(loop_vars, extents)))


def _loads(expr: Any) -> list[Any]:
    """Every load in ``expr`` (callbacks of a structural walk must not raise)."""
    found: list[Any] = []
    tvm_ffi.structural_walk(expr, (tvm.ir.TensorLoad, found.append), order="post")
    return found


class _Chain:
    """Symbolic execution of one chain (module doc): the output nests it becomes."""

    def __init__(self, eligible: list[Any]) -> None:
        self.eligible = eligible
        self.values: dict[Any, TileValue] = {}
        self.views: list[tuple[Any, Any]] = []  # (view, the tile whose memory it is)
        self.written: list[Any] = []  # non-local buffers stored to so far
        self.outputs: list[tirx.Stmt] = []

    def local(self, buffer: Any) -> bool:
        return any(buffer.same_as(b) for b in self.eligible)

    def base_of(self, buffer: Any) -> Any | None:
        return next((base for view, base in self.views if view.same_as(buffer)), None)

    def value_of(self, buffer: Any) -> TileValue:
        """The tile's value over its own shape (a view's: its base's, reshaped)."""
        shape = tuple(int(e or 0) for e in const_shape(buffer))
        base = self.base_of(buffer)
        if base is not None:
            return reshaped(self.value_of(base), shape)
        for key, value in self.values.items():
            if key.same_as(buffer):
                return reshaped(value, shape)
        raise _Refused(f"{buffer.name} is read before the chain writes it")

    def set_value(self, buffer: Any, value: TileValue) -> None:
        if self.base_of(buffer) is not None:
            raise _Refused(f"{buffer.name} is a view that is written")
        for key in list(self.values):
            if key.same_as(buffer):
                del self.values[key]
        self.values[buffer] = value

    def check_reads(self, expr: Any, allowed_index: list[Any] | None, target: Any) -> None:
        """Refuse a value reading a non-local buffer the chain already wrote (or writes
        now, ``target``) anywhere but the element being written (``allowed_index``)."""

        for load in _loads(expr):
            if not any(load.source.same_as(b) for b in [*self.written, target]):
                continue
            same_element = allowed_index is not None and len(load.indices) == len(allowed_index)
            same_element = same_element and all(
                same(a, b) for a, b in zip(load.indices, allowed_index or [], strict=False)
            )
            if not (load.source.same_as(target) and same_element):
                raise _Refused(f"{load.source.name} is read after the chain writes it")

    def step(self, stmt: tirx.Stmt) -> None:
        if isinstance(stmt, tirx.DeclBuffer):
            base = viewed_buffer(stmt)
            self.views.append((stmt.buffer, base))
            return
        op = tile_op(stmt)
        if isinstance(op, CopyOp):
            self.copy(op)
        elif isinstance(op, FillOp):
            if not self.local(op.dst.buffer):
                # Only a forwarded tile's fill is a value of the chain; a fill of memory
                # taken for one would go with the chain, its buffer left unfilled.
                raise _Refused(f"{op.dst.buffer.name} is filled but not forwarded")
            extents = tuple(int(e or 0) for e in const_shape(op.dst.buffer))
            fill = convert(op.value, op.dst.dtype)

            def constant(destination: Region | None) -> Any:
                return fill

            value = TileValue(placeholders(len(extents)), extents, fill, constant)
            self.set_value(op.dst.buffer, value)
        else:
            nest = parallel_nest(stmt)
            assert nest is not None
            self.nest(*nest)

    def copy(self, op: CopyOp) -> None:
        src, dst = op.src, op.dst
        if self.local(dst.buffer):
            extents = tuple(int(e or 0) for e in const_shape(dst.buffer))
            if self.local(src.buffer):
                value = reshaped(self.value_of(src.buffer), extents)
                if str(src.buffer.ty.dtype) != dst.dtype:
                    before, dtype = value.partial, dst.dtype

                    def converted(destination: Region | None) -> Any:
                        return convert(before(destination), dtype)

                    full = convert(value.full, dtype)
                    value = TileValue(value.index, extents, full, converted, value.sources)
                self.set_value(dst.buffer, value)
            else:
                self.set_value(dst.buffer, copy_value(src, extents, dst.dtype))
            return
        # A local tile to memory: one output nest.
        extents = tuple(int(e or 0) for e in const_shape(src.buffer))
        value = self.value_of(src.buffer)
        index = [tirx.Var(f"i{d}", "int32") for d in range(len(extents))]
        target = [m + i for m, i in zip(dst.mins, index, strict=True)]
        full, partial = value.at(index, dst)
        self.check_reads(full, target, dst.buffer)
        self.check_reads(partial, target, dst.buffer)
        self.emit(index, extents, dst, target, full, partial, value.sources)

    def nest(self, loops: list[tirx.For], store: Any) -> None:
        """A ``T.Parallel`` nest: ``store`` is a BufferStore or an element atomic."""
        loop_vars = [loop.loop_var for loop in loops]
        extents = tuple(int(const_int(loop.extent) or 0) for loop in loops)
        atomic = element_atomic(store)
        if atomic is not None:
            self.atomic_nest(loops, store, atomic)
            return
        to_local = self.local(store.buffer)
        # At the loop variables, or at their row-major offset into a tile of as many
        # elements (``B[i * N + j]``): every element written once, in a known order.
        positional = _is_loop_index(store.indices, loop_vars) and (
            const_shape(store.buffer) == extents
        )
        if to_local and not positional and not _flat_store(store, loop_vars, extents):
            raise _Refused(f"{store.buffer.name} is stored at another index")
        evaluate, sources = self.reader(store.value, loop_vars, extents)
        full = evaluate(False, None)
        if to_local:
            index = placeholders(len(extents))
            mapping = dict(zip(loop_vars, index, strict=True))

            def partial(destination: Region | None) -> Any:
                where = destination if positional else None
                return substitute_vars(evaluate(True, where), mapping)

            value = TileValue(index, extents, substitute_vars(full, mapping), partial, sources)
            self.set_value(store.buffer, value)
            return
        # A store to memory at the program's own index: no clipping, sources guarded.
        guarded = evaluate(True, None)
        self.check_reads(full, list(store.indices), store.buffer)
        self.check_reads(guarded, list(store.indices), store.buffer)
        self.written.append(store.buffer)
        body_full = tirx.BufferStore(store.buffer, full, store.indices)
        body_partial = tirx.BufferStore(store.buffer, guarded, store.indices)
        self.outputs.append(
            _guarded_pair(
                _rebuild(loops, body_full), _rebuild(loops, body_partial), sources, None, ()
            )
        )

    def reader(
        self, expr: Any, loop_vars: list[tirx.Var], extents: tuple[int, ...]
    ) -> tuple[Callable[[bool, Region | None], Any], list[Region]]:
        """``(evaluate, sources)``: ``evaluate(partial, destination)`` is ``expr`` with its
        local tiles' values (as they are now: a later statement may rebind a tile).

        A tile is read at the loop variables only, and has the nest's extents (a
        transposing read stays staged: the tile then keeps the gather in L1)."""
        captured: list[tuple[Any, TileValue]] = []
        for load in _loads(expr):
            if not self.local(load.source):
                continue
            if not _is_loop_index(load.indices, loop_vars):
                raise _Refused(f"{load.source.name} is read at another index")
            if const_shape(load.source) != extents:
                raise _Refused(f"{load.source.name} has other extents than the nest")
            if not any(load.source.same_as(b) for b, _ in captured):
                captured.append((load.source, self.value_of(load.source)))
        sources = [s for _, value in captured for s in value.sources]

        def evaluate(partial: bool, destination: Region | None) -> Any:
            def visit(load: Any) -> Any:
                value = next((v for b, v in captured if load.source.same_as(b)), None)
                if value is None:
                    return load
                full, guarded = value.at(list(loop_vars), destination)
                return guarded if partial else full

            return tvm_ffi.structural_map(expr, (tvm.ir.TensorLoad, visit), order="post")

        return evaluate, sources

    def atomic_nest(self, loops: list[tirx.For], stmt: tirx.Evaluate, op: AtomicOp) -> None:
        """``T.atomic_*(G[...], f(tiles))`` per element: the value read from the tiles'
        sources (the atomic itself stays: other blocks may add to the same element)."""
        loop_vars = [loop.loop_var for loop in loops]
        extents = tuple(int(const_int(loop.extent) or 0) for loop in loops)
        evaluate, sources = self.reader(stmt.value, loop_vars, extents)
        full, guarded = evaluate(False, None), evaluate(True, None)
        if self.local(op.dst.buffer):
            raise _Refused(f"an atomic on the tile {op.dst.buffer.name}")
        self.check_reads(full, list(op.dst.mins), op.dst.buffer)
        self.check_reads(guarded, list(op.dst.mins), op.dst.buffer)
        self.written.append(op.dst.buffer)
        self.outputs.append(
            _guarded_pair(
                _rebuild(loops, tirx.Evaluate(full)),
                _rebuild(loops, tirx.Evaluate(guarded)),
                sources,
                None,
                (),
            )
        )

    def emit(
        self,
        index: list[tirx.Var],
        extents: tuple[int, ...],
        dst: Region,
        target: list[Any],
        full: Any,
        partial: Any,
        sources: list[Region],
    ) -> None:
        dtype = dst.dtype
        self.written.append(dst.buffer)
        full_nest: tirx.Stmt = tirx.BufferStore(dst.buffer, convert(full, dtype), target)
        partial_nest: tirx.Stmt = tirx.BufferStore(dst.buffer, convert(partial, dtype), target)
        annotations = {LOOP_KIND_KEY: "parallel"}
        for var, extent in reversed(list(zip(index, extents, strict=True))):
            full_nest = tirx.For(
                var, 0, extent, tirx.ForKind.SERIAL, full_nest, annotations=annotations
            )
        # The partial nest runs over the destination's part inside its buffer only (own
        # loop variables: one variable may not have two ranges in a function).
        fresh = [tirx.Var(f"{v.name}_edge", "int32") for v in index]
        partial_nest = substitute_vars(partial_nest, dict(zip(index, fresh, strict=True)))
        for d in reversed(range(len(extents))):
            start, size = dst.mins[d], dst.buffer.ty.shape[d]
            low = tirx.max(tirx.const(0, "int32"), -start)
            high = tirx.min(tirx.const(extents[d], "int32"), size - start)
            partial_nest = tirx.For(
                fresh[d], low, tirx.max(high - low, 0), tirx.ForKind.SERIAL, partial_nest
            )
        self.outputs.append(_guarded_pair(full_nest, partial_nest, sources, dst, extents))


def _rebuild(loops: list[tirx.For], body: tirx.Stmt) -> tirx.Stmt:
    for loop in reversed(loops):
        body = rebuild_loop(
            loop,
            body=body,
        )
    return body


def _guarded_pair(
    full: tirx.Stmt,
    partial: tirx.Stmt,
    sources: list[Region],
    destination: Region | None,
    extents: tuple[int, ...],
) -> tirx.Stmt:
    conditions: list[Any] = []
    regions = [*sources, *([destination] if destination is not None else [])]
    for region in regions:
        for start, extent, size in zip(
            region.mins, region.extents, region.buffer.ty.shape, strict=True
        ):
            condition = tirx.all(start >= 0, start + extent <= size)
            if not any(same(condition, c) for c in conditions):
                conditions.append(condition)
    if not conditions:
        return full
    return tirx.IfThenElse(tirx.all(*conditions), full, partial)


def _forward_sequence(seq: list[tirx.Stmt]) -> list[tirx.Stmt] | None:
    allocated = [s.buffer for s in seq if isinstance(s, tirx.AllocBuffer)]
    if not allocated:
        return None
    allocated += local_views(seq, allocated)
    new_seq = list(seq)
    changed = False
    forwarded: list[Any] = []
    for start, end, eligible in reversed(find_chains(seq, allocated)):
        if not eligible:
            continue
        chain = _Chain(eligible)
        try:
            for stmt in seq[start:end]:
                chain.step(stmt)
        except _Refused:
            continue
        new_seq[start:end] = chain.outputs
        forwarded += eligible
        changed = True
    if not changed:
        return None
    # The forwarded tiles are no longer used: drop their allocations (on llvm each
    # would still cost a workspace allocation per block).
    used = [b for s in new_seq if not isinstance(s, tirx.AllocBuffer) for b in vars_used(s)]
    return [
        s
        for s in new_seq
        if not (
            isinstance(s, tirx.AllocBuffer)
            and member(s.buffer, forwarded)
            and not member(s.buffer, used)
        )
    ]


def forward_copies(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every staging chain forwarded (module doc)."""

    def rewrite(seq_stmt: tirx.SeqStmt) -> tirx.Stmt:
        result = _forward_sequence(list(seq_stmt.seq))
        if result is None:
            return seq_stmt
        if not result:
            return tirx.Evaluate(tirx.const(0, "int32"))
        return tirx.SeqStmt(result) if len(result) != 1 else result[0]

    stmt = drop_overwritten_copies(localize_workspace_regions(stmt))
    stmt = tvm_ffi.structural_map(stmt, (tirx.SeqStmt, rewrite), order="post")
    # A forwarded fill can make a float divisor the constant 0 (T.fill(z, 0); A[i] / z[i]),
    # which TVM's folder (and IR printer) refuses: written as its IEEE result.
    return split_divmod_loops(zero_operands_kept(stmt))


@dataclass(frozen=True)
class CpuForwardCopiesPass(PrimFuncPass):
    """Forward ``T.copy`` staging chains into direct loops over memory (module doc)."""

    name: ClassVar[str] = "cpu-forward-copies"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its staging chains forwarded."""
        return forward_copies(body)
