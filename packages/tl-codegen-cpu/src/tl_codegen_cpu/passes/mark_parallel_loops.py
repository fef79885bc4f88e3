"""`cpu-mark-parallel-loops`: put a marker call before every outermost parallel loop.

TVM's C codegen prints a parallel loop as a plain serial ``for``; a C toolchain
replaces the marker line it prints (``MARKER();``) with ``#pragma omp parallel for``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.launch import rebuild_loop
from tl_passes.pass_base import PassContext, PrimFuncPass

#: The default marker: an extern call the C toolchain rewrites into an OpenMP pragma.
PARALLEL_FOR_MARKER = "TL_OMP_PARALLEL_FOR"


def _contains_parallel_loop(stmt: tirx.Stmt) -> bool:
    found = False

    def visit(loop: tirx.For) -> None:
        nonlocal found
        if loop.kind == tirx.ForKind.PARALLEL:
            found = True

    tvm_ffi.structural_walk(stmt, (tirx.For, visit), order="post")
    return found


def _is_marker(stmt: tirx.Stmt, marker: str) -> bool:
    if not isinstance(stmt, tirx.Evaluate) or not isinstance(stmt.value, tvm.ir.Call):
        return False
    args = stmt.value.args
    return (
        stmt.value.op.same_as(tvm.ir.Op.get("tirx.call_extern"))
        and len(args) == 1
        and isinstance(args[0], tvm.ir.StringImm)
        and str(args[0].value) == marker
    )


def mark_outermost_parallel_loops(stmt: tirx.Stmt, marker: str) -> tirx.Stmt:
    """Return ``stmt`` with ``Evaluate(call_extern(marker))`` before each outermost parallel loop.

    Parallel loops nested in another parallel loop are made serial (and lose
    their marker): OpenMP would serialize them anyway, and TVM's LLVM codegen
    refuses nested parallel regions. A parallel loop of constant extent 1 (a
    one-block grid) becomes serial, unmarked: a thread team would only cost time.
    """

    def serialize(loop: tirx.For) -> tirx.For:
        if loop.kind != tirx.ForKind.PARALLEL:
            return loop
        return rebuild_loop(loop, kind=tirx.ForKind.SERIAL)

    def drop_markers(seq: tirx.SeqStmt) -> tirx.Stmt:
        kept = [s for s in seq.seq if not _is_marker(s, marker)]
        if len(kept) == len(seq.seq):
            return seq
        return kept[0] if len(kept) == 1 else tirx.SeqStmt(kept)

    def mark(loop: tirx.For) -> tirx.Stmt:
        # Post-order: inner parallel loops were marked already; undo that here.
        if loop.kind != tirx.ForKind.PARALLEL:
            return loop
        body = tvm_ffi.structural_map(
            loop.body, [(tirx.For, serialize), (tirx.SeqStmt, drop_markers)], order="post"
        )
        if _is_marker(body, marker):
            body = tirx.Evaluate(tirx.const(0, "int32"))
        if isinstance(loop.extent, tirx.IntImm) and int(loop.extent) == 1:
            # One iteration (a one-block grid): the calling thread runs it; no OpenMP
            # team is started (its start-up would dominate a small kernel).
            return rebuild_loop(loop, body=body, kind=tirx.ForKind.SERIAL)
        marked = rebuild_loop(loop, body=body)
        return tirx.SeqStmt([tirx.Evaluate(tirx.call_extern("int32", marker)), marked])

    return tvm_ffi.structural_map(stmt, (tirx.For, mark), order="post")


def serialize_nested_parallel_loops(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every parallel loop inside another parallel loop made serial (the
    outer loop keeps the cores busy; TVM's LLVM code generator refuses nested parallel
    regions: "Nested parallel loop is not supported by threadpool")."""

    def serialize(loop: tirx.For) -> tirx.For:
        if loop.kind != tirx.ForKind.PARALLEL:
            return loop
        return rebuild_loop(loop, kind=tirx.ForKind.SERIAL)

    def outer(loop: tirx.For) -> tirx.For:
        if loop.kind != tirx.ForKind.PARALLEL or not _contains_parallel_loop(loop.body):
            return loop
        body = tvm_ffi.structural_map(loop.body, (tirx.For, serialize), order="post")
        return rebuild_loop(loop, body=body)

    return tvm_ffi.structural_map(stmt, (tirx.For, outer), order="pre")


@dataclass(frozen=True)
class CpuSerializeNestedParallelLoopsPass(PrimFuncPass):
    """Make parallel loops nested in a parallel loop serial (``llvm``; on ``c``
    `CpuMarkParallelLoopsPass` does it while marking)."""

    name: ClassVar[str] = "cpu-serialize-nested-parallel-loops"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with no parallel loop inside another."""
        if not _contains_parallel_loop(body):
            return body
        return serialize_nested_parallel_loops(body)


@dataclass(frozen=True)
class CpuMarkParallelLoopsPass(PrimFuncPass):
    """Insert ``marker()`` calls before outermost parallel loops (for the C toolchain).

    Args:
        marker: the extern function name of the marker call.
    """

    name: ClassVar[str] = "cpu-mark-parallel-loops"
    marker: str = PARALLEL_FOR_MARKER

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its outermost parallel loops marked."""
        if not _contains_parallel_loop(body):
            return body
        return mark_outermost_parallel_loops(body, self.marker)
