"""A kernel-private global workspace that each block only uses as one tile becomes a tile.

``T.alloc_global`` gives a kernel a scratch buffer in global memory. Programs
often use it as a staging area: each block copies its tile in and copies the
same tile back out (``T.copy(A[r], W[r]); T.copy(W[r], B[r])``). Nothing outside
the kernel can see the workspace, so when every use of it is such a copy, in one
statement sequence, at one region ``r`` (the first a write), each block only
reads back what it wrote itself: the region becomes a block-local tile of ``r``'s
extents, which `cpu-forward-copies` then forwards (one pass over memory instead
of three, and no workspace the size of the problem allocated per call).

The tile keeps the copies' padding: it is used only when the region provably lies
inside the workspace, or when every other buffer those copies touch has the
workspace's shape and the same region mins (then an element outside the workspace
is outside them too: the copy in reads 0 there and the copy out skips it).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.forward_values import same
from tl_ir import scopes
from tl_ir.ops import CopyOp, Region, describe, encode, is_tile_op

_WORKSPACE_SCOPES = (scopes.GLOBAL, "")


def _copy(stmt: Any) -> CopyOp | None:
    if isinstance(stmt, tirx.Evaluate) and is_tile_op(stmt.value):
        op = describe(stmt.value)
        return op if isinstance(op, CopyOp) else None
    return None


def _mentions(node: Any, buffer: Any) -> bool:
    found = False

    def visit(var: Any) -> None:
        nonlocal found
        if var.same_as(buffer):
            found = True

    tvm_ffi.structural_walk(node, (tvm.ir.Var, visit), order="post")
    return found


def _loop_analyzer(body: tirx.Stmt) -> Any:
    """A simplifier knowing the range of every loop variable in ``body``."""
    analyzer = tvm.sym.Analyzer()

    def visit(loop: tirx.For) -> None:
        analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))

    tvm_ffi.structural_walk(body, (tirx.For, visit), order="pre")
    return analyzer


def _keeps_padding(copies: list[CopyOp], workspace: Any, region: Region, analyzer: Any) -> bool:
    inside = all(
        analyzer.can_prove(tirx.all(start >= 0, start + extent <= size))
        for start, extent, size in zip(region.mins, region.extents, workspace.ty.shape, strict=True)
    )
    if inside:
        return True
    for op in copies:
        other = op.dst if op.src.buffer.same_as(workspace) else op.src
        if other.rank != region.rank:
            return False
        if not all(same(a, b) for a, b in zip(other.mins, region.mins, strict=True)):
            return False
        if not all(
            same(a, b) for a, b in zip(other.buffer.ty.shape, workspace.ty.shape, strict=True)
        ):
            return False
    return True


def _tile_region(seq: list[tirx.Stmt], workspace: Any, analyzer: Any) -> Region | None:
    """The one region of ``workspace`` every copy in ``seq`` uses, when ``seq``'s uses of it
    are all such copies (the first writing it) and the tile keeps their padding."""
    copies: list[CopyOp] = []
    for stmt in seq:
        if not _mentions(stmt, workspace):
            continue
        op = _copy(stmt)
        if op is None or op.src.buffer.same_as(op.dst.buffer):
            return None
        if not (op.src.buffer.same_as(workspace) or op.dst.buffer.same_as(workspace)):
            return None
        if not copies and not op.dst.buffer.same_as(workspace):
            return None  # read before this block writes it
        copies.append(op)
    if not copies:
        return None
    regions = [op.src if op.src.buffer.same_as(workspace) else op.dst for op in copies]
    first = regions[0]
    if None in first.const_extents:
        return None
    for region in regions[1:]:
        if not all(same(a, b) for a, b in zip(region.mins, first.mins, strict=True)):
            return None
        if region.const_extents != first.const_extents:
            return None
    return first if _keeps_padding(copies, workspace, first, analyzer) else None


def _localize(seq: list[tirx.Stmt], workspace: Any, region: Region) -> list[tirx.Stmt]:
    shape = [int(e or 0) for e in region.const_extents]
    tile = tirx.decl_buffer(
        shape, str(workspace.ty.dtype), name=f"{workspace.name}_tile", scope=scopes.FRAGMENT
    )
    whole = Region(tile, tuple(tirx.const(0, "int32") for _ in shape), tuple(region.extents))
    rewritten: list[tirx.Stmt] = [tirx.AllocBuffer(tile)]
    for stmt in seq:
        op = _copy(stmt)
        if op is not None and op.src.buffer.same_as(workspace):
            op = dataclasses.replace(op, src=dataclasses.replace(whole, access=op.src.access))
        elif op is not None and op.dst.buffer.same_as(workspace):
            op = dataclasses.replace(op, dst=dataclasses.replace(whole, access=op.dst.access))
        rewritten.append(stmt if op is None else tirx.Evaluate(encode(op)))
    return rewritten


def localize_workspace_regions(body: tirx.Stmt) -> tirx.Stmt:
    """Return ``body`` with its block-private uses of workspaces as tiles (module doc)."""
    workspaces: list[Any] = []

    def collect(alloc: tirx.AllocBuffer) -> None:
        if str(alloc.buffer.ty.storage_scope) in _WORKSPACE_SCOPES:
            workspaces.append(alloc.buffer)

    tvm_ffi.structural_walk(body, (tirx.AllocBuffer, collect), order="pre")
    if not workspaces:
        return body
    analyzer = _loop_analyzer(body)
    for workspace in workspaces:
        done = False

        def rewrite(seq_stmt: tirx.SeqStmt, workspace: Any = workspace) -> tirx.Stmt:
            nonlocal done
            seq = list(seq_stmt.seq)
            if done or any(
                isinstance(s, tirx.AllocBuffer) and s.buffer.same_as(workspace) for s in seq
            ):
                return seq_stmt
            region = _tile_region(seq, workspace, analyzer)
            if region is None:
                return seq_stmt
            done = True
            return tirx.SeqStmt(_localize(seq, workspace, region))

        candidate = tvm_ffi.structural_map(body, (tirx.SeqStmt, rewrite), order="post")
        if not done:
            continue
        # Every use must have moved to the tile: the allocation is then the only mention.
        without_alloc = tvm_ffi.structural_map(
            candidate,
            (tirx.SeqStmt, lambda s, w=workspace: _drop_alloc(s, w)),
            order="post",
        )
        if not _mentions(without_alloc, workspace):
            body = without_alloc
    return body


def _drop_alloc(seq_stmt: tirx.SeqStmt, workspace: Any) -> tirx.Stmt:
    kept = [
        s
        for s in seq_stmt.seq
        if not (isinstance(s, tirx.AllocBuffer) and s.buffer.same_as(workspace))
    ]
    if len(kept) == len(seq_stmt.seq):
        return seq_stmt
    if not kept:
        return tirx.Evaluate(tirx.const(0, "int32"))
    return kept[0] if len(kept) == 1 else tirx.SeqStmt(kept)
