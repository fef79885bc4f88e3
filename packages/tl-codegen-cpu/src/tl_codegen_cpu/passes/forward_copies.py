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
  either ``L[i, j, ...] = f(...)`` into a whole local tile at the loop variables, or
  a store to a non-local buffer at any index; ``f`` reads local tiles only at the
  loop variables (tiles of the nest's extents) and may read anything else;
* ``T.copy(L -> G[r])``: a whole local tile to a non-local region of its extents.

The value of each local tile is tracked symbolically through the chain; every
store to a non-local buffer becomes one nest evaluating it there. A local tile
qualifies only when all its uses in the sequence lie inside the chain (a tile
a ``T.gemm`` or a reduction also reads stays staged, and so do the statements
that touch it). The rewrite is refused (the chain stays as it is) when a tile is
read before the chain writes it, or when a value would read a non-local buffer
after the chain has written it (except the same element, as in-place updates do).

Partial tiles keep their meaning. Each output nest sits behind a test whether
the whole tile lies inside every buffer it touches: then the nest has no guard
(it vectorizes). Otherwise a second nest runs over the part of the destination
inside its buffer only (clipped loop bounds, no per-element store guard, so the
compilers still vectorize it); a source whose tile is not placed exactly like the
destination's (same buffer shape and offsets) reads 0 outside its buffer through
a per-element select. Runs before `cpu-lower-tile-ops`; the forwarded tiles'
allocations stay (unused; later passes drop them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.ops import AtomicOp, CopyOp, FillOp, Region, const_int, describe, is_tile_op
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass

LOOP_KIND_KEY = "tl.loop_kind"


class _Refused(Exception):
    """The chain cannot be forwarded safely (it is left as it is)."""


def _tile_op(stmt: tirx.Stmt) -> Any:
    if isinstance(stmt, tirx.Evaluate) and is_tile_op(stmt.value):
        return describe(stmt.value)
    return None


def _atomic(stmt: Any) -> AtomicOp | None:
    op = _tile_op(stmt) if isinstance(stmt, tirx.Evaluate) else None
    return op if isinstance(op, AtomicOp) and not isinstance(op.value, Region) else None


def _parallel_nest(stmt: tirx.Stmt) -> tuple[list[tirx.For], Any] | None:
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
    if not loops or not (isinstance(node, tirx.BufferStore) or _atomic(node) is not None):
        return None
    return loops, node


def _is_loop_index(indices: Any, loop_vars: list[tirx.Var]) -> bool:
    return len(indices) == len(loop_vars) and all(
        isinstance(index, tirx.Var) and index.same_as(var)
        for index, var in zip(indices, loop_vars, strict=True)
    )


def _shape(buffer: Any) -> tuple[int | None, ...]:
    return tuple(const_int(extent) for extent in buffer.ty.shape)


def _whole(region: Region, extents: tuple[int, ...]) -> bool:
    return region.is_full and _shape(region.buffer) == extents


def _convert(value: Any, dtype: str) -> Any:
    return value if str(value.ty.dtype) == dtype else tirx.Cast(dtype, value)


def _vars_used(node: Any) -> list[Any]:
    """Every Var ``node`` mentions (buffers are Vars: loads, stores, tile-op regions, views)."""
    found: list[Any] = []

    def add(var: Any) -> None:
        if not any(var.same_as(b) for b in found):
            found.append(var)

    tvm_ffi.structural_walk(node, (tvm.ir.Var, add), order="post")
    return found


def _loads(expr: Any) -> list[Any]:
    """Every load in ``expr`` (callbacks of a structural walk must not raise)."""
    found: list[Any] = []
    tvm_ffi.structural_walk(expr, (tvm.ir.TensorLoad, found.append), order="post")
    return found


def _same(a: Any, b: Any) -> bool:
    return bool(tvm_ffi.structural_equal(a, b))


@dataclass
class _Value:
    """A local tile's contents as expressions of placeholder indices ``p``.

    ``full`` assumes every source tile lies inside its buffer; ``partial`` reads 0
    outside (a select per source not placed like the destination is added when it
    is evaluated). ``sources`` are the non-local regions read through copies.
    """

    index: list[tirx.Var]
    full: Any
    partial: Callable[[Region | None], Any]
    sources: list[Region] = field(default_factory=list)

    def at(self, index: list[Any], destination: Region | None) -> tuple[Any, Any]:
        mapping = dict(zip(self.index, index, strict=True))
        return (
            substitute_vars(self.full, mapping),
            substitute_vars(self.partial(destination), mapping),
        )


def _placed_alike(source: Region, destination: Region | None) -> bool:
    """Whether ``source``'s tile lies exactly where ``destination``'s does in a buffer of
    the same shape (so the destination's clipping keeps the source inside its buffer)."""
    if destination is None or source.rank != destination.rank:
        return False
    return all(_same(a, b) for a, b in zip(source.mins, destination.mins, strict=True)) and all(
        _same(a, b)
        for a, b in zip(source.buffer.ty.shape, destination.buffer.ty.shape, strict=True)
    )


def _copy_value(source: Region, extents: tuple[int, ...], dtype: str) -> _Value:
    index = [tirx.Var(f"p{d}", "int32") for d in range(len(extents))]
    element = [m + p for m, p in zip(source.mins, index, strict=True)]
    load = _convert(tirx.BufferLoad(source.buffer, element), dtype)

    def partial(destination: Region | None) -> Any:
        if _placed_alike(source, destination):
            return load
        inside = [
            tirx.all(e >= 0, e < size)
            for e, size in zip(element, source.buffer.ty.shape, strict=True)
        ]
        return tirx.if_then_else(tirx.all(*inside), load, tirx.const(0, dtype))

    return _Value(index, load, partial, [source])


class _Chain:
    """Symbolic execution of one chain (module doc): the output nests it becomes."""

    def __init__(self, eligible: list[Any]) -> None:
        self.eligible = eligible
        self.values: dict[Any, _Value] = {}
        self.written: list[Any] = []  # non-local buffers stored to so far
        self.outputs: list[tirx.Stmt] = []

    def local(self, buffer: Any) -> bool:
        return any(buffer.same_as(b) for b in self.eligible)

    def value_of(self, buffer: Any) -> _Value:
        for key, value in self.values.items():
            if key.same_as(buffer):
                return value
        raise _Refused(f"{buffer.name} is read before the chain writes it")

    def set_value(self, buffer: Any, value: _Value) -> None:
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
                _same(a, b) for a, b in zip(load.indices, allowed_index or [], strict=False)
            )
            if not (load.source.same_as(target) and same_element):
                raise _Refused(f"{load.source.name} is read after the chain writes it")

    def step(self, stmt: tirx.Stmt) -> None:
        op = _tile_op(stmt)
        if isinstance(op, CopyOp):
            self.copy(op)
        elif isinstance(op, FillOp):
            extents = _shape(op.dst.buffer)
            index = [tirx.Var(f"p{d}", "int32") for d in range(len(extents))]
            fill = _convert(op.value, op.dst.dtype)

            def constant(destination: Region | None) -> Any:
                return fill

            self.set_value(op.dst.buffer, _Value(index, fill, constant))
        else:
            nest = _parallel_nest(stmt)
            assert nest is not None
            self.nest(*nest)

    def copy(self, op: CopyOp) -> None:
        src, dst = op.src, op.dst
        if self.local(dst.buffer):
            extents = tuple(int(e or 0) for e in _shape(dst.buffer))
            if self.local(src.buffer):
                value = self.value_of(src.buffer)
                if str(src.buffer.ty.dtype) != dst.dtype:
                    before, dtype = value.partial, dst.dtype

                    def converted(destination: Region | None) -> Any:
                        return _convert(before(destination), dtype)

                    full = _convert(value.full, dtype)
                    value = _Value(value.index, full, converted, value.sources)
                self.set_value(dst.buffer, value)
            else:
                self.set_value(dst.buffer, _copy_value(src, extents, dst.dtype))
            return
        # A local tile to memory: one output nest.
        extents = tuple(int(e or 0) for e in _shape(src.buffer))
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
        atomic = _atomic(store)
        if atomic is not None:
            self.atomic_nest(loops, store, atomic)
            return
        to_local = self.local(store.buffer)
        if to_local and not (
            _is_loop_index(store.indices, loop_vars) and _shape(store.buffer) == extents
        ):
            raise _Refused(f"{store.buffer.name} is stored at another index")
        evaluate, sources = self.reader(store.value, loop_vars, extents)
        full = evaluate(False, None)
        if to_local:
            index = [tirx.Var(f"p{d}", "int32") for d in range(len(extents))]
            mapping = dict(zip(loop_vars, index, strict=True))

            def partial(destination: Region | None) -> Any:
                return substitute_vars(evaluate(True, destination), mapping)

            value = _Value(index, substitute_vars(full, mapping), partial, sources)
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
        local tiles' values (as they are now: a later statement may rebind a tile)."""
        captured: list[tuple[Any, _Value]] = []
        for load in _loads(expr):
            if not self.local(load.source):
                continue
            if not _is_loop_index(load.indices, loop_vars):
                raise _Refused(f"{load.source.name} is read at another index")
            if _shape(load.source) != extents:
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
        full_nest: tirx.Stmt = tirx.BufferStore(dst.buffer, _convert(full, dtype), target)
        partial_nest: tirx.Stmt = tirx.BufferStore(dst.buffer, _convert(partial, dtype), target)
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
        body = tirx.For(
            loop.loop_var,
            loop.min,
            loop.extent,
            loop.kind,
            body,
            annotations=dict(loop.annotations.items()),
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
            if not any(_same(condition, c) for c in conditions):
                conditions.append(condition)
    if not conditions:
        return full
    return tirx.IfThenElse(tirx.all(*conditions), full, partial)


def _chain_statement(stmt: tirx.Stmt, is_local: Callable[[Any], bool]) -> bool:
    """Whether ``stmt`` has one of the forms a chain is made of (module doc)."""
    op = _tile_op(stmt)
    if isinstance(op, CopyOp):
        src_local, dst_local = is_local(op.src.buffer), is_local(op.dst.buffer)
        if not (src_local or dst_local):
            return False
        if src_local and not op.src.is_full:
            return False
        if dst_local and not op.dst.is_full:
            return False
        src_extents = op.src.const_extents
        dst_extents = op.dst.const_extents
        return None not in src_extents and src_extents == dst_extents
    if isinstance(op, FillOp):
        return is_local(op.dst.buffer) and op.dst.is_full and None not in _shape(op.dst.buffer)
    return _parallel_nest(stmt) is not None


def _member(buffer: Any, buffers: list[Any]) -> bool:
    return any(buffer.same_as(b) for b in buffers)


def _chains(seq: list[tirx.Stmt], allocated: list[Any]) -> list[tuple[int, int, list[Any]]]:
    """The runs ``[start, end)`` of chain statements and the local tiles each forwards.

    A tile qualifies when every use of it in ``seq`` lies inside one run; a tile that
    does not (a ``T.gemm`` operand, a view's base) is memory to the chain: copies into
    it become output nests, reads of it plain loads.
    """

    member = _member
    # An allocation is not a use; anything else naming a tile is (a view of it included).
    uses = [
        []
        if isinstance(s, tirx.AllocBuffer)
        else [b for b in _vars_used(s) if member(b, allocated)]
        for s in seq
    ]
    eligible = list(allocated)
    while True:
        is_eligible = functools.partial(_member, buffers=eligible)
        candidate = [_chain_statement(s, is_eligible) for s in seq]
        runs: list[tuple[int, int]] = []
        start = None
        for position, ok in enumerate([*candidate, False]):
            if ok and start is None:
                start = position
            elif not ok and start is not None:
                runs.append((start, position))
                start = None
        result = []
        for start, end in runs:
            inside = [b for u in uses[start:end] for b in u]
            outside = [b for p, u in enumerate(uses) if not start <= p < end for b in u]
            tiles = [b for b in inside if member(b, eligible) and not member(b, outside)]
            result.append((start, end, tiles))
        still = [b for _, _, tiles in result for b in tiles]
        if len(still) == len(eligible):
            return result
        eligible = still


def _forward_sequence(seq: list[tirx.Stmt]) -> list[tirx.Stmt] | None:
    allocated = [s.buffer for s in seq if isinstance(s, tirx.AllocBuffer)]
    if not allocated:
        return None
    new_seq = list(seq)
    changed = False
    for start, end, eligible in reversed(_chains(seq, allocated)):
        if not eligible:
            continue
        chain = _Chain(eligible)
        try:
            for stmt in seq[start:end]:
                chain.step(stmt)
        except _Refused:
            continue
        new_seq[start:end] = chain.outputs
        changed = True
    return new_seq if changed else None


def forward_copies(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every staging chain forwarded (module doc)."""

    def rewrite(seq_stmt: tirx.SeqStmt) -> tirx.Stmt:
        result = _forward_sequence(list(seq_stmt.seq))
        if result is None:
            return seq_stmt
        return tirx.SeqStmt(result) if len(result) != 1 else result[0]

    return tvm_ffi.structural_map(stmt, (tirx.SeqStmt, rewrite), order="post")


@dataclass(frozen=True)
class CpuForwardCopiesPass(PrimFuncPass):
    """Forward ``T.copy`` staging chains into direct loops over memory (module doc)."""

    name: ClassVar[str] = "cpu-forward-copies"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its staging chains forwarded."""
        return forward_copies(body)
