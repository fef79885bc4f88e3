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
writes, and the reverse); a ``while`` loop likewise.

Every thread must reach every barrier. An ``if`` whose accesses conflict
with what came before gets its barrier before it. Inside an ``if`` or a
``while`` (a ``T.copy`` into shared memory under a run-time condition,
then a read of the tile), barriers go where the conflicts are when the
condition is the same on every thread of the block (`ThreadDependence`:
it reads no thread index, directly or through local variables). Under a
condition that differs between threads, the ``if`` is split at its
barriers: ``if c: A; sync; if c: B`` (each barrier is reached by all
threads, each part runs on the threads it did before), which needs the
condition to read nothing the branch writes; a ``while`` whose condition
differs between threads cannot hold a barrier. Both refusals raise
`GpuLoweringError` saying what to change. A block-uniform condition around
shared accesses is marked as such for TVM's own barrier planner
(`block_uniform`), which otherwise refuses to add a barrier under it.

The async copies of a pipelined ring (`tl_passes.gpu.pipelined_ring`) are not
counted: the ring's wait and barrier at the top of each iteration order them
(before, the last reads of the slot they refill; after, the reads of the
tile they bring). The ring's prologue gets a barrier before it when accesses
of a tile that is dead from there on are pending: the dynamic shared memory
merge may give the ring's slots that tile's memory, and the prologue's copies
must not land while another warp still reads it. Likewise when accesses of
the ring's own tiles are pending (a ring run again, as in an outer loop: the
prologue refills slots the last run's slow warps may still be reading).

A named barrier (``T.sync_threads(id, count)``, among part of the block's
threads) orders accesses as any barrier does; an ``if`` that holds one is never
split (that would move the barrier out of its condition, onto every thread).

Every shared access is assumed to cross threads, which is conservative:
a barrier may appear where each thread only touches its own elements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_ir.barriers import named_barrier
from tl_ir.launch import rebuild_loop
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.layout import is_buffer_load, loop_kind_of
from tl_passes.gpu.uniformity import ThreadDependence, loaded_buffers, written_buffers
from tl_passes.pass_base import PassContext, PrimFuncPass


def barrier() -> tirx.Stmt:
    """The block barrier statement (``__syncthreads()`` on CUDA)."""
    return tirx.Evaluate(
        tirx.call_intrin("int32", "tirx.tvm_storage_sync", tvm.ir.StringImm(scopes.SHARED))
    )


def block_uniform(condition: Any) -> Any:
    """``condition`` marked as the same on every thread of the block
    (``tvm_thread_invariant``), for a condition `ThreadDependence` proved uniform.

    TVM's own barrier planner (``ThreadSync``, run when device code is generated)
    treats every other condition as thread-dependent and refuses to place a barrier
    under it ("Cannot insert syncs inside condition"), although its view of shared
    memory is coarser than this pass's: dynamic shared tiles share one allocation, so
    it may want a barrier between accesses of two different tiles (a ``T.copy`` into
    V after reads of K under ``if block_mask[k] != 0``). Under the marked condition it
    places that barrier where it is needed. The mark prints as its operand.
    """
    if _is_thread_invariant(condition):
        return condition
    return tirx.call_intrin("bool", "tirx.tvm_thread_invariant", condition)


def _is_thread_invariant(expr: Any) -> bool:
    return isinstance(expr, tvm.ir.Call) and str(getattr(expr.op, "name", "")) == (
        "tirx.tvm_thread_invariant"
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

    def copy(self) -> Accesses:
        """An independent copy."""
        return Accesses(set(self.reads), set(self.writes))

    @staticmethod
    def union(*parts: Accesses) -> Accesses:
        """The accesses of all ``parts``."""
        merged = Accesses()
        for part in parts:
            merged.merge(part)
        return merged


def _is_shared(buffer: Any) -> bool:
    return str(buffer.ty.storage_scope) in scopes.SHARED_SCOPES


def shared_accesses(stmt: Any) -> Accesses:
    """The shared buffers ``stmt`` reads and writes (tile-op regions included)."""
    from tl_ir import ops as tile
    from tl_passes.gpu.pipelined_ring import is_async_copy

    result = Accesses()
    # A pipelined ring orders its async copies with its own wait and barrier.
    stmt = tvm_ffi.structural_map(
        stmt,
        (
            tirx.AttrStmt,
            lambda s: tirx.Evaluate(tirx.IntImm("int32", 0)) if is_async_copy(s) else s,
        ),
        order="post",
    )

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


def _starts_prologue(stmt: Any) -> bool:
    """Whether ``stmt`` is (or guards) an async copy of a pipelined ring's prologue."""
    from tl_passes.gpu.pipelined_ring import is_prologue_copy

    if isinstance(stmt, tirx.IfThenElse):
        return any(is_prologue_copy(s) for s in _flat(stmt.then_case))
    return is_prologue_copy(stmt)


def _prologue_destinations(stmt: Any) -> set[str]:
    """The shared tiles the ring prologues at the top level of ``stmt`` fill."""
    from tl_passes.gpu.pipelined_ring import is_prologue_copy

    found: set[str] = set()
    for child in _flat(stmt):
        if not _starts_prologue(child):
            continue
        for part in _flat(child.then_case if isinstance(child, tirx.IfThenElse) else child):
            if is_prologue_copy(part):
                found |= shared_accesses(part.body).writes
    return found


def _pending_dead_tiles(pending: Accesses, rest: Sequence[Any]) -> bool:
    """Whether ``pending`` touches a shared tile that nothing in ``rest`` accesses.

    Such a tile is dead when a ring's prologue starts, so the dynamic shared memory
    merge may hand its memory to the ring's slots; the prologue's async copies then
    write where other threads may still be reading (TVM's own barrier planner sees an
    async copy's destination only through ``address_of``, as a read, and orders no
    read before it). A tile accessed later stays live across the ring: no aliasing.
    """
    touched = pending.reads | pending.writes
    if not touched:
        return False
    later = shared_accesses(_seq(list(rest)))
    return bool(touched - later.reads - later.writes)


def _is_compound(stmt: Any) -> bool:
    if isinstance(stmt, tirx.SeqStmt):
        return True
    if isinstance(stmt, tirx.For):
        return loop_kind_of(stmt) != "parallel"
    return isinstance(stmt, tirx.AttrStmt)


def _process(stmt: Any, pending: Accesses, threads: ThreadDependence) -> tuple[Any, Accesses]:
    """Insert barriers in ``stmt`` given the accesses pending since the last barrier."""
    from tl_passes.gpu.pipelined_ring import is_async_copy

    if is_async_copy(stmt):
        return stmt, pending  # ordered by its ring's wait and barrier
    if isinstance(stmt, tirx.SeqStmt):
        out: list[Any] = []
        rest = list(stmt.seq)
        for index, child in enumerate(rest):
            if _starts_prologue(child) and (
                _pending_dead_tiles(pending, rest[index:])
                or (pending.reads | pending.writes) & _prologue_destinations(child)
            ):
                out.append(barrier())
                pending = Accesses()
            new_child, pending = _process(child, pending, threads)
            out.extend(new_child.seq if isinstance(new_child, tirx.SeqStmt) else [new_child])
        return tirx.SeqStmt(out), pending
    if isinstance(stmt, tirx.AttrStmt):
        body, pending = _process(stmt.body, pending, threads)
        return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, body), pending
    if isinstance(stmt, tirx.For) and _is_compound(stmt):
        whole = shared_accesses(stmt.body)
        if whole.empty():
            return stmt, pending
        prefix: list[Any] = []
        if pending.conflicts_with(whole):
            prefix.append(barrier())
            pending = Accesses()
        body, end = _process(stmt.body, Accesses(), threads)
        head = _head_accesses(stmt.body, whole)
        # A ring's prologue at the top of the body refills tiles the previous
        # iteration's ring may still be reading.
        head = Accesses(head.reads, head.writes | _prologue_destinations(stmt.body))
        if end.conflicts_with(head):
            body = tirx.SeqStmt([*_flat(body), barrier()])
            end = Accesses()
        after = Accesses()
        after.merge(pending)
        after.merge(end)
        loop = rebuild_loop(stmt, body=body)
        return (tirx.SeqStmt([*prefix, loop]) if prefix else loop), after
    if isinstance(stmt, tirx.IfThenElse):
        return _process_if(stmt, pending, threads)
    if isinstance(stmt, tirx.While):
        return _process_while(stmt, pending, threads)
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


def _head_accesses(body: Any, whole: Accesses) -> Accesses:
    """What an iteration of a loop with ``body`` touches before its first barrier: the
    accesses the previous iteration's last ones must be ordered with. A body that
    starts with a barrier (``T.sync_threads``, named or not) orders them itself."""
    head: list[Any] = []
    for child in _flat(body):
        if is_barrier(child):
            return shared_accesses(_seq(head)) if head else Accesses()
        if _barrier_count(child):
            return whole
        head.append(child)
    return whole


def _flat(stmt: Any) -> list[Any]:
    return list(stmt.seq) if isinstance(stmt, tirx.SeqStmt) else [stmt]


def _barrier_count(stmt: Any) -> int:
    count = [0]

    def visit(node: Any) -> None:
        if is_barrier(node):
            count[0] += 1

    tvm_ffi.structural_walk(stmt, (tirx.Evaluate, visit), order="pre")
    return count[0]


def _process_if(stmt: Any, pending: Accesses, threads: ThreadDependence) -> tuple[Any, Accesses]:
    unit = shared_accesses(stmt)
    if unit.empty():
        return stmt, pending
    prefix: list[Any] = []
    if pending.conflicts_with(unit):
        prefix.append(barrier())
        pending = Accesses()
    condition_reads = shared_accesses(tirx.Evaluate(stmt.condition))
    entry = Accesses.union(pending, condition_reads)
    then_case, then_end = _process(stmt.then_case, entry.copy(), threads)
    else_case, else_end = (None, entry.copy())
    if stmt.else_case is not None:
        else_case, else_end = _process(stmt.else_case, entry.copy(), threads)
    added = _barrier_count(then_case) - _barrier_count(stmt.then_case)
    if else_case is not None:
        added += _barrier_count(else_case) - _barrier_count(stmt.else_case)
    uniform = threads.is_uniform(stmt.condition)
    if added == 0:
        # No conflict inside: the if is one unit, as every other statement.
        if uniform:
            stmt = tirx.IfThenElse(block_uniform(stmt.condition), stmt.then_case, stmt.else_case)
        return _with_prefix(prefix, stmt), Accesses.union(pending, unit)
    after = Accesses.union(then_end, else_end)
    if uniform:
        uniform_if = tirx.IfThenElse(block_uniform(stmt.condition), then_case, else_case)
        return _with_prefix(prefix, uniform_if), after
    return _with_prefix(prefix, _split_if(stmt, then_case, else_case)), after


def _split_if(original: Any, then_case: Any, else_case: Any | None) -> Any:
    """``if c: A; sync; B`` as ``if c: A; sync; if c: B`` (and the else branch under
    ``not c``), so that every thread reaches each barrier."""
    condition = original.condition
    written = written_buffers(original.then_case)
    if original.else_case is not None:
        written |= written_buffers(original.else_case)
    rewritten = sorted(loaded_buffers(condition) & written)
    if rewritten:
        raise GpuLoweringError(
            f"a block barrier is needed inside `if {condition}`, whose condition differs "
            f"between threads and reads {rewritten}, which the branch writes; every thread "
            "must reach a barrier: make the condition the same on every thread of the "
            "block, or compute it into a local variable before the if"
        )
    parts: list[Any] = []
    for case, guard in ((then_case, condition), (else_case, tirx.Not(condition))):
        if case is None:
            continue
        for index, segment in enumerate(_segments(case, condition)):
            if index:
                parts.append(barrier())
            if segment:
                parts.append(tirx.IfThenElse(guard, _seq(segment), None))
    return tirx.SeqStmt(parts) if len(parts) > 1 else parts[0]


def _segments(case: Any, condition: Any) -> list[list[Any]]:
    """The statements of ``case`` between its top-level barriers."""
    segments: list[list[Any]] = [[]]
    for child in _flat(case):
        if named_barrier(child) is not None:
            raise GpuLoweringError(
                f"a block barrier is needed inside `if {condition}`, whose condition "
                "differs between threads and which holds a named barrier "
                "(T.sync_threads(id, count)); add the T.sync_threads(id, count) the branch "
                "needs between its conflicting shared accesses yourself"
            )
        if is_barrier(child):
            segments.append([])
        elif _barrier_count(child):
            raise GpuLoweringError(
                f"a block barrier is needed inside a loop under `if {condition}`, whose "
                "condition differs between threads; every thread must reach a barrier: "
                "make the condition the same on every thread of the block, or move the "
                "loop out of the if"
            )
        else:
            segments[-1].append(child)
    return segments


def _process_while(stmt: Any, pending: Accesses, threads: ThreadDependence) -> tuple[Any, Accesses]:
    whole = shared_accesses(stmt)
    if whole.empty():
        return stmt, pending
    prefix: list[Any] = []
    if pending.conflicts_with(whole):
        prefix.append(barrier())
        pending = Accesses()
    condition_reads = shared_accesses(tirx.Evaluate(stmt.condition))
    body, end = _process(stmt.body, condition_reads.copy(), threads)
    if Accesses.union(end, condition_reads).conflicts_with(whole):
        body = tirx.SeqStmt([*_flat(body), barrier()])
        end = Accesses()
    if _barrier_count(body) > _barrier_count(stmt.body) and not threads.is_uniform(stmt.condition):
        raise GpuLoweringError(
            f"a block barrier is needed inside `while {stmt.condition}`, whose condition "
            "differs between threads; every thread must reach a barrier: make the loop "
            "condition the same on every thread of the block"
        )
    after = Accesses.union(pending, end, condition_reads)
    condition = stmt.condition
    if threads.is_uniform(condition):
        condition = block_uniform(condition)
    return _with_prefix(prefix, tirx.While(condition, body)), after


def _with_prefix(prefix: list[Any], stmt: Any) -> Any:
    return tirx.SeqStmt([*prefix, stmt]) if prefix else stmt


def _seq(stmts: list[Any]) -> Any:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def insert_barriers(body: tirx.Stmt, thread_vars: Sequence[Any] = ()) -> tirx.Stmt:
    """Return ``body`` with block barriers inserted (see the module docstring).

    Args:
        body: a kernel body at tile level.
        thread_vars: the kernel's thread index variables (what makes a condition
            differ between threads); none: only ``T.Parallel`` loop variables do.

    Raises:
        GpuLoweringError: a barrier is needed where not every thread would reach it
            (the message says what to change).
    """
    new_body, _ = _process(body, Accesses(), ThreadDependence(body, thread_vars))
    return new_body


@dataclass(frozen=True)
class GpuInsertBarriersPass(PrimFuncPass):
    """Insert ``tvm_storage_sync("shared")`` between conflicting shared accesses."""

    name: ClassVar[str] = "gpu-insert-barriers"

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` with block barriers inserted (module docstring)."""
        from tl_ir.launch import kernel_launch
        from tl_passes.gpu.launches import map_kernels

        def one_kernel(kernel: tirx.PrimFunc) -> tirx.PrimFunc:
            launch = kernel_launch(kernel)
            thread_vars = list(launch.thread_vars) if launch is not None else []
            return kernel.with_body(insert_barriers(kernel.body, thread_vars))

        try:
            result, _ = map_kernels(func, one_kernel)
        except GpuLoweringError as exc:
            raise GpuLoweringError(f"{self.where(function_name)}: {exc}") from exc
        return result
