"""`gpu-insert-barriers`: block barriers between conflicting shared-memory accesses.

Runs on the tile-level IR (before `gpu-lower-tile-ops`), where each tile op
and each ``T.Parallel`` nest is one unit whose elements are spread over the
threads. Walking each statement list in order, the pass keeps the shared
buffers read and written since the last barrier; a unit that reads a
buffer written since then (read after write), or writes one read or
written since then (write after read / write), gets a
``tvm_storage_sync("shared")`` before it. A loop whose body starts with
accesses that conflict with those at its end gets a barrier at the end of
its body as well (the next iteration's reads after this iteration's
writes, and the reverse). Barriers are never placed inside an ``if`` (a
conditional unit counts as one), so every thread reaches each of them.

Every shared access is assumed to cross threads, which is conservative:
a barrier may appear where each thread only touches its own elements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.gpu.layout import is_buffer_load, loop_kind_of
from tl_passes.pass_base import PassContext, PrimFuncPass

SHARED_SCOPES = ("shared", "shared.dyn")


def barrier() -> tirx.Stmt:
    """The block barrier statement (``__syncthreads()`` on CUDA)."""
    return tirx.Evaluate(
        tirx.call_intrin("int32", "tirx.tvm_storage_sync", tvm.ir.StringImm("shared"))
    )


def is_barrier(stmt: Any) -> bool:
    """Whether ``stmt`` is a block barrier."""
    if not isinstance(stmt, tirx.Evaluate):
        return False
    call = stmt.value
    return isinstance(call, tvm.ir.Call) and str(getattr(call.op, "name", "")) == (
        "tirx.tvm_storage_sync"
    )


@dataclass
class Accesses:
    """Shared buffers (by name) read and written by a piece of code."""

    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)

    def conflicts_with(self, later: Accesses) -> bool:
        """Whether ``later`` running after ``self`` without a barrier could race."""
        return bool(later.reads & self.writes or later.writes & (self.reads | self.writes))

    def merge(self, other: Accesses) -> None:
        """Add ``other``'s accesses."""
        self.reads |= other.reads
        self.writes |= other.writes

    def empty(self) -> bool:
        """Whether nothing is recorded."""
        return not self.reads and not self.writes


def _is_shared(buffer: Any) -> bool:
    return str(buffer.ty.storage_scope) in SHARED_SCOPES


def shared_accesses(stmt: Any) -> Accesses:
    """The shared buffers ``stmt`` reads and writes (tile-op regions included)."""
    from tl_ir import ops as tile

    result = Accesses()

    def visit_store(store: Any) -> None:
        if _is_shared(store.buffer):
            result.writes.add(str(store.buffer.name))

    def visit_any(node: Any) -> None:
        if is_buffer_load(node) and _is_shared(node.source):
            result.reads.add(str(node.source.name))

    def visit_call(call: Any) -> None:
        if not tile.is_tile_op(call):
            return
        for arg in call.args:
            if isinstance(arg, tvm.ir.Call) and str(getattr(arg.op, "name", "")) == "tl.region":
                region = arg
                buffer = region.args[0].source
                if not _is_shared(buffer):
                    continue
                access = int(region.args[1].value)
                if access & 1:
                    result.reads.add(str(buffer.name))
                if access & 2:
                    result.writes.add(str(buffer.name))

    tvm_ffi.structural_walk(stmt, (tirx.BufferStore, visit_store), order="pre")
    tvm_ffi.structural_walk(stmt, (tvm.ir.Call, visit_call), order="pre")
    tvm_ffi.structural_walk(stmt, visit_any, order="pre")
    # Region anchors are loads of the operand's first element; they are not reads.
    return result


def _is_compound(stmt: Any) -> bool:
    if isinstance(stmt, tirx.SeqStmt):
        return True
    if isinstance(stmt, tirx.For):
        return loop_kind_of(stmt) != "parallel"
    return isinstance(stmt, tirx.AttrStmt)


def _process(stmt: Any, pending: Accesses) -> tuple[Any, Accesses]:
    """Insert barriers in ``stmt`` given the accesses pending since the last barrier."""
    if isinstance(stmt, tirx.SeqStmt):
        out: list[Any] = []
        for child in stmt.seq:
            new_child, pending = _process(child, pending)
            out.extend(new_child.seq if isinstance(new_child, tirx.SeqStmt) else [new_child])
        return tirx.SeqStmt(out), pending
    if isinstance(stmt, tirx.AttrStmt):
        body, pending = _process(stmt.body, pending)
        return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, body), pending
    if isinstance(stmt, tirx.For) and _is_compound(stmt):
        whole = shared_accesses(stmt.body)
        if whole.empty():
            return stmt, pending
        prefix: list[Any] = []
        if pending.conflicts_with(whole):
            prefix.append(barrier())
            pending = Accesses()
        body, end = _process(stmt.body, Accesses())
        if end.conflicts_with(whole):
            body = tirx.SeqStmt([*_flat(body), barrier()])
            end = Accesses()
        after = Accesses()
        after.merge(pending)
        after.merge(end)
        loop = tirx.For(
            stmt.loop_var,
            stmt.min,
            stmt.extent,
            stmt.kind,
            body,
            annotations=stmt.annotations,
        )
        return (tirx.SeqStmt([*prefix, loop]) if prefix else loop), after
    if is_barrier(stmt):
        return stmt, Accesses()
    unit = shared_accesses(stmt)
    if unit.empty():
        return stmt, pending
    if pending.conflicts_with(unit):
        merged = Accesses()
        merged.merge(unit)
        return tirx.SeqStmt([barrier(), stmt]), merged
    pending.merge(unit)
    return stmt, pending


def _flat(stmt: Any) -> list[Any]:
    return list(stmt.seq) if isinstance(stmt, tirx.SeqStmt) else [stmt]


def insert_barriers(body: tirx.Stmt) -> tirx.Stmt:
    """Return ``body`` with block barriers inserted (see the module docstring)."""
    new_body, _ = _process(body, Accesses())
    return new_body


@dataclass(frozen=True)
class GpuInsertBarriersPass(PrimFuncPass):
    """Insert ``tvm_storage_sync("shared")`` between conflicting shared accesses."""

    name: ClassVar[str] = "gpu-insert-barriers"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """``body`` with block barriers inserted (module docstring)."""
        return insert_barriers(body)
