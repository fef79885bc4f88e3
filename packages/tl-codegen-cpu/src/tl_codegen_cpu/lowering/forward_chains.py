"""Finding `cpu-forward-copies`' chains: which runs of statements qualify, which tiles
each may forward (the forms are listed in `forward_copies`' module doc)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.launch import LOOP_KIND_KEY
from tl_ir.ops import (
    AtomicOp,
    CopyOp,
    FillOp,
    Region,
    const_int,
    describe,
    is_tile_op,
    viewed_buffer,
)


def tile_op(stmt: tirx.Stmt) -> Any:
    """The tile op ``stmt`` evaluates (its typed description), else None."""
    if isinstance(stmt, tirx.Evaluate) and is_tile_op(stmt.value):
        return describe(stmt.value)
    return None


def element_atomic(stmt: Any) -> AtomicOp | None:
    """The element atomic (``T.atomic_*`` of one value) ``stmt`` is, else None."""
    op = tile_op(stmt) if isinstance(stmt, tirx.Evaluate) else None
    return op if isinstance(op, AtomicOp) and not isinstance(op.value, Region) else None


def parallel_nest(stmt: tirx.Stmt) -> tuple[list[tirx.For], Any] | None:
    """``(loops, store)`` of a perfect ``T.Parallel`` nest (min 0, constant extents)
    around one store or element atomic, else None."""
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
    if not loops or not (isinstance(node, tirx.BufferStore) or element_atomic(node) is not None):
        return None
    return loops, node


def const_shape(buffer: Any) -> tuple[int | None, ...]:
    """``buffer``'s extents as ints (None where symbolic)."""
    return tuple(const_int(extent) for extent in buffer.ty.shape)


def vars_used(node: Any) -> list[Any]:
    """Every Var ``node`` mentions (buffers are Vars: loads, stores, tile-op regions, views)."""
    found: list[Any] = []

    def add(var: Any) -> None:
        if not any(var.same_as(b) for b in found):
            found.append(var)

    tvm_ffi.structural_walk(node, (tvm.ir.Var, add), order="post")
    return found


def chain_statement(stmt: tirx.Stmt, is_local: Callable[[Any], bool]) -> bool:
    """Whether ``stmt`` has one of the forms a chain is made of (`forward_copies`' doc)."""
    if isinstance(stmt, tirx.DeclBuffer):
        base = viewed_buffer(stmt)
        return base is not None and is_local(base) and is_local(stmt.buffer)
    op = tile_op(stmt)
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
        return is_local(op.dst.buffer) and op.dst.is_full and None not in const_shape(op.dst.buffer)
    return parallel_nest(stmt) is not None


def member(buffer: Any, buffers: list[Any]) -> bool:
    """Whether ``buffer`` is one of ``buffers`` (identity, not name)."""
    return any(buffer.same_as(b) for b in buffers)


def find_chains(seq: list[tirx.Stmt], allocated: list[Any]) -> list[tuple[int, int, list[Any]]]:
    """The runs ``[start, end)`` of chain statements and the local tiles each forwards.

    A tile qualifies when every use of it in ``seq`` lies inside one run; a tile that
    does not (a ``T.gemm`` operand, a view's base) is memory to the chain: copies into
    it become output nests, reads of it plain loads.
    """

    # An allocation is not a use; anything else naming a tile is (a view of it included).
    uses = [
        [] if isinstance(s, tirx.AllocBuffer) else [b for b in vars_used(s) if member(b, allocated)]
        for s in seq
    ]
    views = [
        (s.buffer, base)
        for s in seq
        if isinstance(s, tirx.DeclBuffer)
        and (base := viewed_buffer(s)) is not None
        and member(base, allocated)
    ]
    eligible = list(allocated)
    while True:
        is_eligible = functools.partial(member, buffers=eligible)
        candidate = [chain_statement(s, is_eligible) for s in seq]
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
            tiles: list[Any] = []
            for b in inside:
                # Once each: the fixed point below compares counts, and a tile used
                # by two statements of a run counted twice there hid a tile that had
                # just dropped out (the run kept its T.fill, which went with the chain).
                if member(b, eligible) and not member(b, outside) and not member(b, tiles):
                    tiles.append(b)
            result.append((start, end, tiles))
        still = [b for _, _, tiles in result for b in tiles]
        # A view and the tile it views are forwarded together or not at all.
        for view, base in views:
            if not (member(view, still) and member(base, still)):
                still = [b for b in still if not (b.same_as(view) or b.same_as(base))]
        if len(still) == len(eligible):
            return result
        eligible = still


def local_views(seq: list[tirx.Stmt], allocated: list[Any]) -> list[Any]:
    """The same-dtype, constant-shape views (``T.reshape``) of ``allocated`` tiles,
    following views of views."""
    tiles = list(allocated)
    for stmt in seq:
        if not isinstance(stmt, tirx.DeclBuffer):
            continue
        base = viewed_buffer(stmt)
        view = stmt.buffer
        if base is None or not member(base, tiles) or None in const_shape(view):
            continue
        if str(view.ty.dtype) == str(base.ty.dtype):
            tiles.append(view)
    return tiles[len(allocated) :]
