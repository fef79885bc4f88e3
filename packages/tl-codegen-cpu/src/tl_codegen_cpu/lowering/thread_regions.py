"""The threads of a block as loops, split at barriers (used by `cpu-lower-launch`).

A kernel whose body names its thread index is per-thread code, as on a GPU,
and may mix in operations that the block's threads carry out *together*:

* tile ops on block-shared operands (``T.copy`` into a shared tile, ``T.gemm``,
  ``T.reduce_*`` over fragments, ``T.fill`` of a shared tile...),
* ``T.Parallel`` loops that store to shared, fragment or global memory (through a
  tile op too: a reducer update, ``T.atomic_add(acc[0], A[i])``),
* ``tvm_thread_allreduce`` (a reduction across threads),
* barriers: ``T.sync_threads`` and the ones TileLang inserts between
  accesses of different threads to one shared buffer.

On the CPU the block's threads become serial loops (``threadIdx.x`` innermost)
and such a block runs as a sequence of **regions**: the per-thread code
between two barriers is one loop nest over the threads; a cooperative
operation runs once, between the nests, on behalf of all threads (TileLang
would spread its elements over the threads; the result is the same). Every
region boundary is a barrier: all threads finish the region before any starts
the next. Running each thread's part of a region in turn is a legal schedule
of the GPU program, so race-free kernels compute what they compute on a GPU.

Where barriers go. A cooperative operation or ``T.sync_threads`` always ends
a region. Between two per-thread statements a barrier is placed, as TileLang's
thread-sync planning does, when both touch one shared or fragment buffer and
one of them writes it (for a loop, also from the end of one iteration to the
start of the next). Barriers are only placed at points every thread reaches:
loops and branches whose bounds or conditions do not depend on the thread
(*uniform*) may be split into regions inside; a branch on the thread index
(``if tx < 128:``) keeps its per-thread statements as branches inside the
nests, and its cooperative operations run once when the condition holds for
at least one thread (TileLang partitions them over exactly those threads). A
barrier, thread reduction, or cooperative op inside a loop whose bounds depend
on the thread raises `tl_ir.errors.UnsupportedError` (on a GPU that would
deadlock or is undefined). A named barrier (``T.sync_threads(id, count)``) is a
region boundary where that means the same (`named_barriers`): its count is the
number of threads that reach it, under thread-index conditions or none.

Tile ops that work on one thread's own data (an operand in ``local`` memory,
or a region indexed by the thread: ``T.clear(acc)``) and scalar atomics
(``T.atomic_add(shared[tx], acc[0])``, and ``T.atomic_add(C[0], 1)`` too: as in
TileLang, every thread runs its element atomic) are per-thread code; they are lowered to
loops here, by the same emitters `cpu-lower-tile-ops` uses.

Values a thread keeps across a region boundary are its ``local`` arrays
(``T.alloc_local``, ``T.alloc_var`` and scalar assignments): those used in
more than one region, or in a region repeated by an enclosing loop, become
per-thread arrays with a leading thread dimension (`expand_per_thread_locals`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.named_barriers import check_named_barrier
from tl_codegen_cpu.lowering.thread_allreduce import ALLREDUCE_KEY, is_sum_reducer
from tl_codegen_cpu.lowering.thread_ir import (
    SharedAccesses,
    ThreadSpace,
    is_block_barrier,
    is_element_atomic,
    is_local,
    reads_memory,
    scope_of,
    thread_allreduce,
    tile_regions,
    uses_any,
)
from tl_ir import scopes
from tl_ir.barriers import named_barrier
from tl_ir.errors import UnsupportedError
from tl_ir.launch import LOOP_KIND_KEY as _LOOP_KIND_KEY
from tl_ir.launch import rebuild_loop
from tl_ir.ops import ACCESS_WRITE, const_int, describe, is_tile_op
from tl_passes.buffer_rewrite import substitute_vars


@dataclass
class _Segment:
    """One piece of a block: per-thread code, a once-per-block statement or a barrier."""

    kind: str  # "thread" | "block" | "barrier"
    stmt: Any = None
    #: thread-dependent conditions under which a "block" statement runs (for any thread)
    guards: list[Any] = field(default_factory=list)


_BARRIER = _Segment("barrier")


class RegionSplitter:
    """Turns one block body into regions (see the module docstring).

    Args:
        space: the block's threads.
        dependent: `thread_ir.thread_dependent_values` of the body.
        lower_thread_op: lowers one per-thread tile-op call to a statement.
        where: pass and function name, for error messages.
    """

    def __init__(
        self,
        space: ThreadSpace,
        dependent: set[Any],
        lower_thread_op: Callable[[Any], Any],
        where: str,
    ) -> None:
        self.space = space
        self.dependent = dependent
        self.lower_thread_op = lower_thread_op
        self.where = where
        #: allocations made once per block, before every region
        self.block_allocations: list[Any] = []
        self._counter = 0

    def lower_block(self, body: Any) -> Any:
        """The block body as loops over its threads, split into regions."""
        segments = self._statement(body, [], self._accesses_none())[0]
        assembled = self.assemble(segments)  # may add allocations
        return _seq([*self.block_allocations, assembled])

    # -- classification

    def _accesses(self, node: Any) -> SharedAccesses:
        return SharedAccesses.of(node, self.space.variables)

    def _accesses_none(self) -> SharedAccesses:
        return SharedAccesses(self.space.variables)

    @staticmethod
    def _is_parallel(loop: Any) -> bool:
        kind = loop.annotations.get(_LOOP_KIND_KEY) if loop.annotations else None
        return kind is not None and str(kind) == "parallel"

    def _is_cooperative(self, stmt: Any) -> bool:
        if is_block_barrier(stmt) or thread_allreduce(stmt) is not None:
            return True
        if isinstance(stmt, tirx.Evaluate) and is_tile_op(stmt.value):
            op = describe(stmt.value)
            if is_element_atomic(op) or any(is_local(r.buffer) for r in tile_regions(op)):
                return False
            return not uses_any(stmt.value, self.dependent)
        if isinstance(stmt, tirx.For) and self._is_parallel(stmt):
            # TileLang spreads a T.Parallel loop over the threads when it stores
            # outside thread-local memory or touches a fragment.
            if uses_any(stmt, self.dependent):
                return False
            shared_or_global = False

            def visit_store(store: Any) -> None:
                nonlocal shared_or_global
                if not is_local(store.buffer):
                    shared_or_global = True

            def visit_load(load: Any) -> None:
                nonlocal shared_or_global
                if scope_of(load.source) == scopes.FRAGMENT:
                    shared_or_global = True

            def visit_tile_op(evaluate: Any) -> None:
                # A tile op in the loop (a reducer update, T.atomic_add(acc[0], A[i]))
                # stores through its call, not a BufferStore: when it writes outside
                # thread-local memory the loop is the block's work like a store, each
                # iteration once; run by every thread, a sum of 8 ones read 1024 with
                # 128 threads.
                nonlocal shared_or_global
                if not is_tile_op(evaluate.value):
                    return
                for region in tile_regions(describe(evaluate.value)):
                    if region.access & ACCESS_WRITE and not is_local(region.buffer):
                        shared_or_global = True

            tvm_ffi.structural_walk(
                stmt,
                [
                    (tirx.BufferStore, visit_store),
                    (tvm.ir.TensorLoad, visit_load),
                    (tirx.Evaluate, visit_tile_op),
                ],
                order="post",
            )
            return shared_or_global
        return False

    def _contains_split(self, stmt: Any) -> bool:
        if self._is_cooperative(stmt):
            return True
        if isinstance(stmt, tirx.SeqStmt):
            return any(self._contains_split(s) for s in stmt.seq)
        if isinstance(stmt, tirx.For):
            return not self._is_parallel(stmt) and self._contains_split(stmt.body)
        if isinstance(stmt, tirx.While | tirx.AttrStmt | tirx.LetStmt):
            return self._contains_split(stmt.body)
        if isinstance(stmt, tirx.IfThenElse):
            return self._contains_split(stmt.then_case) or (
                stmt.else_case is not None and self._contains_split(stmt.else_case)
            )
        return False

    def _dependent(self, expr: Any) -> bool:
        return uses_any(expr, self.dependent)

    # -- lowering

    def _statement(
        self, stmt: Any, guards: list[Any], pending: SharedAccesses
    ) -> tuple[list[_Segment], SharedAccesses]:
        """Segments for ``stmt`` and the shared accesses pending after it.

        ``guards`` are the thread-dependent conditions around ``stmt`` (no barrier
        can be placed under them); ``pending`` the accesses since the last barrier.
        """
        if isinstance(stmt, tirx.SeqStmt):
            return self._sequence(list(stmt.seq), guards, pending)
        if self._is_cooperative(stmt):
            return self._cooperative(stmt, guards), self._accesses_none()
        acc = self._accesses(stmt)
        if isinstance(stmt, tirx.For) and not self._is_parallel(stmt):
            bounds = (stmt.min, stmt.extent)
            rebuild = lambda body: rebuild_loop(  # noqa: E731
                stmt, body=body, kind=tirx.ForKind.SERIAL
            )
            return self._loop(stmt, bounds, rebuild, guards, pending, acc)
        if isinstance(stmt, tirx.While):
            rebuild = lambda body: tirx.While(stmt.condition, body)  # noqa: E731
            return self._loop(stmt, (stmt.condition,), rebuild, guards, pending, acc)
        if isinstance(stmt, tirx.IfThenElse):
            return self._branch(stmt, guards, pending, acc)
        if self._contains_split(stmt):
            return self._wrapper(stmt, guards, acc)
        return self._per_thread(stmt, guards, pending, acc)

    def _per_thread(
        self, stmt: Any, guards: list[Any], pending: SharedAccesses, acc: SharedAccesses
    ) -> tuple[list[_Segment], SharedAccesses]:
        segment = self._plain(stmt, guards)
        if not guards and pending.conflicts_with(acc):
            return [_BARRIER, segment], acc
        return [segment], pending.union(acc)

    def _plain(self, stmt: Any, guards: list[Any]) -> _Segment:
        def rewrite(evaluate: Any) -> Any:
            if is_tile_op(evaluate.value):
                return self.lower_thread_op(evaluate.value)
            if is_block_barrier(evaluate):
                return tirx.Evaluate(tirx.const(0, "int32"))
            return evaluate

        lowered = tvm_ffi.structural_map(stmt, (tirx.Evaluate, rewrite), order="post")
        if guards:
            lowered = tirx.IfThenElse(_conjunction(guards), lowered, None)
        return _Segment("thread", lowered)

    def _sequence(
        self, items: list[Any], guards: list[Any], pending: SharedAccesses
    ) -> tuple[list[_Segment], SharedAccesses]:
        local_allocations: list[Any] = []
        segments: list[_Segment] = []
        for item in items:
            if isinstance(item, tirx.AllocBuffer):
                if is_local(item.buffer):
                    local_allocations.append(item)
                else:  # shared by the block's threads: one per block, before the threads
                    self.block_allocations.append(item)
                continue
            produced, pending = self._statement(item, guards, pending)
            segments.extend(produced)
        if any(s.kind != "thread" for s in segments):
            # Split: thread-local arrays are made outside the thread loops (values
            # that cross a barrier become per-thread arrays later).
            return [_Segment("block", a) for a in local_allocations] + segments, pending
        stmts = [*local_allocations, *(s.stmt for s in segments)]
        if not stmts:
            return [], pending
        return [_Segment("thread", _seq(stmts))], pending

    def _cooperative(self, stmt: Any, guards: list[Any]) -> list[_Segment]:
        if is_block_barrier(stmt):
            if named_barrier(stmt) is not None:
                check_named_barrier(stmt, guards, self.space, self.where)
                return [_BARRIER]
            if guards:
                raise UnsupportedError(
                    f"{self.where}: T.sync_threads under a condition on the thread index "
                    "(not every thread reaches it)"
                )
            return [_BARRIER]
        reduction = thread_allreduce(stmt)
        if reduction is not None:
            if guards:
                raise UnsupportedError(
                    f"{self.where}: a thread reduction under a condition on the thread index"
                )
            return [_Segment("block", self._allreduce(*reduction))]
        return [_Segment("block", stmt, list(guards))]

    def _loop(
        self,
        loop: Any,
        bounds: tuple[Any, ...],
        rebuild: Callable[[Any], Any],
        guards: list[Any],
        pending: SharedAccesses,
        acc: SharedAccesses,
    ) -> tuple[list[_Segment], SharedAccesses]:
        if any(self._dependent(b) for b in bounds):
            if self._contains_split(loop):
                raise UnsupportedError(
                    f"{self.where}: a loop whose bounds depend on the thread index contains "
                    "T.sync_threads, a thread reduction, or a tile op / T.Parallel loop the "
                    "block's threads run together (on a GPU not every thread would reach it)"
                )
            return self._per_thread(loop, guards, pending, acc)
        # One iteration's accesses are pending when the next one starts.
        inner = self._statement(loop.body, guards, acc)[0]
        if all(s.kind == "thread" for s in inner):
            return self._per_thread(loop, guards, pending, acc)
        return [_Segment("block", rebuild(self.assemble(inner)))], acc

    def _branch(
        self, branch: Any, guards: list[Any], pending: SharedAccesses, acc: SharedAccesses
    ) -> tuple[list[_Segment], SharedAccesses]:
        condition = branch.condition
        if not self._dependent(condition):
            then = self._statement(branch.then_case, guards, self._accesses_none())[0]
            other: list[_Segment] = []
            if branch.else_case is not None:
                other = self._statement(branch.else_case, guards, self._accesses_none())[0]
            if all(s.kind == "thread" for s in then + other):
                return self._per_thread(branch, guards, pending, acc)
            rebuilt = tirx.IfThenElse(
                condition,
                self.assemble(then),
                self.assemble(other) if branch.else_case is not None else None,
            )
            return [_Segment("block", rebuilt)], acc
        if not self._contains_split(branch):
            return self._per_thread(branch, guards, pending, acc)
        segments: list[_Segment] = []
        if pending.conflicts_with(acc) and not guards:
            segments.append(_BARRIER)
        if reads_memory(condition):
            # Evaluated once per thread before either side runs (a side may change
            # what the condition reads).
            flag = self._new_buffer("thread_condition", "int32", scopes.LOCAL)
            store = tirx.BufferStore(flag, tirx.Cast("int32", condition), [0])
            segments.append(self._plain(store, guards))
            condition = tirx.BufferLoad(flag, [0]) != 0
        segments += self._statement(branch.then_case, [*guards, condition], acc)[0]
        if branch.else_case is not None:
            negated = [*guards, tirx.Not(condition)]
            segments += self._statement(branch.else_case, negated, acc)[0]
        return segments, acc

    def _wrapper(
        self, stmt: Any, guards: list[Any], acc: SharedAccesses
    ) -> tuple[list[_Segment], SharedAccesses]:
        if isinstance(stmt, tirx.AttrStmt):
            inner = self._statement(stmt.body, guards, self._accesses_none())[0]
            rebuilt = tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, self.assemble(inner))
            return [_Segment("block", rebuilt)], acc
        if isinstance(stmt, tirx.LetStmt) and not self._dependent(stmt.value):
            inner = self._statement(stmt.body, guards, self._accesses_none())[0]
            rebuilt = tirx.LetStmt(stmt.var, stmt.value, self.assemble(inner))
            return [_Segment("block", rebuilt)], acc
        raise UnsupportedError(
            f"{self.where}: cannot place a barrier inside this {type(stmt).__name__} on CPU "
            "targets (a value bound per thread that lives across a barrier: assign it to "
            "a T.alloc_var instead)"
        )

    # -- thread reductions

    def _allreduce(self, reducer: Any, call: Any) -> Any:
        args = list(call.args)
        size = int(args[0].value)
        sources = args[1 : 1 + size]
        condition = args[1 + size]
        results = args[2 + size : 2 + 2 * size]
        reduced = [a for a in args[2 + 2 * size :] if isinstance(a, tvm.ir.Var)]
        if not all(isinstance(r, tvm.ir.TensorLoad) for r in results):
            raise UnsupportedError(
                f"{self.where}: tvm_thread_allreduce results must be buffer elements"
            )
        accumulators = [
            self._new_buffer(f"allreduce_acc{j}", str(s.ty.dtype), scopes.SHARED)
            for j, s in enumerate(sources)
        ]
        current = [tirx.BufferLoad(a, [0]) for a in accumulators]
        mapping: dict[Any, Any] = {}
        for lhs, value in zip(reducer.lhs, current, strict=True):
            mapping[lhs] = value
        for rhs, source in zip(reducer.rhs, sources, strict=True):
            mapping[rhs] = source
        folds = [
            tirx.BufferStore(a, substitute_vars(tirx.Evaluate(r), mapping).value, [0])
            for a, r in zip(accumulators, reducer.result, strict=True)
        ]
        init = [
            tirx.BufferStore(a, identity, [0])
            for a, identity in zip(accumulators, reducer.identity_element, strict=True)
        ]
        publish = [
            tirx.BufferStore(r.source, value, list(r.indices))
            for r, value in zip(results, current, strict=True)
        ]
        fold = self.space.nest(tirx.IfThenElse(condition, _seq(folds), None), over=reduced)
        # `thread_allreduce` lanes a sum's fold nest (it finds it by this mark).
        kind = "sum" if is_sum_reducer(reducer) else "other"
        marked = {**fold.annotations, ALLREDUCE_KEY: tvm.ir.StringImm(kind)}
        fold = rebuild_loop(fold, annotations=marked)
        group = _seq([*init, fold, self.space.nest(_seq(publish), over=reduced)])
        others = [v for v in self.space.variables if not any(v.same_as(r) for r in reduced)]
        return self.space.nest(group, over=others, mark=False) if others else group

    # -- assembly

    def _new_buffer(self, name: str, dtype: str, scope: str) -> Any:
        self._counter += 1
        buffer = tirx.decl_buffer((1,), dtype, name=f"{name}_{self._counter}", scope=scope)
        self.block_allocations.append(tirx.AllocBuffer(buffer))
        return buffer

    def assemble(self, segments: list[_Segment]) -> Any:
        """One statement: consecutive per-thread segments share one loop nest."""
        out: list[Any] = []
        group: list[Any] = []

        def flush() -> None:
            if group:
                out.append(self.space.nest(_seq(list(group))))
                group.clear()

        for segment in segments:
            if segment.kind == "thread":
                group.append(segment.stmt)
                continue
            flush()
            if segment.kind == "block":
                out.append(self._guarded(segment))
        flush()
        return _seq(out) if out else tirx.Evaluate(tirx.const(0, "int32"))

    def _guarded(self, segment: _Segment) -> Any:
        if not segment.guards:
            return segment.stmt
        # Runs once when its condition holds for at least one thread (TileLang
        # spreads it over exactly those threads).
        if self._holds_for_some_thread(_conjunction(segment.guards)):
            return segment.stmt  # unconditional: later passes see through it
        flag = self._new_buffer("any_thread", "int32", scopes.SHARED)
        found = tirx.IfThenElse(
            _conjunction(segment.guards), tirx.BufferStore(flag, tirx.const(1, "int32"), [0]), None
        )
        return _seq(
            [
                tirx.BufferStore(flag, tirx.const(0, "int32"), [0]),
                self.space.nest(found),
                tirx.IfThenElse(tirx.BufferLoad(flag, [0]) != 0, segment.stmt, None),
            ]
        )

    def _holds_for_some_thread(self, condition: Any) -> bool:
        """Whether ``condition`` provably holds for the first or the last thread (a
        condition on the thread index alone, such as ``tx < 128``)."""
        if reads_memory(condition):
            return False
        extents = [const_int(e) for e in self.space.extents]
        if None in extents:
            return False
        analyzer = tvm.sym.Analyzer()
        for position in (0, -1):
            mapping = {
                var: tirx.const(0 if position == 0 else int(extent or 1) - 1, var.ty.dtype)
                for var, extent in zip(self.space.variables, extents, strict=True)
            }
            at_thread = substitute_vars(tirx.Evaluate(condition), mapping).value
            if analyzer.can_prove(at_thread):
                return True
        return False


def _conjunction(conditions: list[Any]) -> Any:
    result = conditions[0]
    for condition in conditions[1:]:
        result = tirx.And(result, condition)
    return result


def _seq(stmts: list[Any]) -> Any:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)
