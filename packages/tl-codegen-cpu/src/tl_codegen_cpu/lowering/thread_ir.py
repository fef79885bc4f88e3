"""What the thread-region lowering needs to know about a block body (`thread_regions`).

Scopes, barriers and thread reductions, the block's thread space, the
block-shared accesses of a statement (for barrier placement) and which values
may differ between threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_ir.errors import UnsupportedError
from tl_ir.launch import LOOP_KIND_KEY
from tl_ir.ops import (
    ACCESS_READ,
    AtomicOp,
    CopyOp,
    CumsumOp,
    FillOp,
    GemmOp,
    PrintOp,
    ReduceOp,
    Region,
    describe,
    is_tile_op,
)

#: Annotation on the outermost loop of each loop nest over a block's threads.
THREAD_NEST_KEY = "tl.cpu_thread_nest"

_BLOCK_SHARED_SCOPES = (*scopes.SHARED_SCOPES, scopes.FRAGMENT)
#: ``T.sync_threads`` scopes that are a block barrier (``global`` would be grid-wide).
_BLOCK_BARRIER_SCOPES = (*scopes.SHARED_SCOPES, scopes.WARP)


def scope_of(buffer: Any) -> str:
    """The storage scope of a buffer (``"global"`` when unset)."""
    return scopes.buffer_scope(buffer)


def is_local(buffer: Any) -> bool:
    """Whether the buffer is thread-private (``local`` or ``local.var``)."""
    return scopes.is_local(buffer)


def op_name(call: Any) -> str:
    """The name of a call's Op (``""`` for calls of functions that are not Ops)."""
    return str(call.op.name) if isinstance(call.op, tvm.ir.Op) else ""


def uses_any(node: Any, variables: Any) -> bool:
    """Whether ``node`` (an expression or statement) refers to any Var in ``variables``."""
    if not variables:
        return False
    found = False

    def visit(var: Any) -> None:
        nonlocal found
        if var in variables:
            found = True

    tvm_ffi.structural_walk(node, (tvm.ir.Var, visit), order="post")
    return found


def contains(node: Any, *node_types: type) -> bool:
    """Whether ``node`` (itself included) holds a node of one of ``node_types``."""
    found = False

    def visit(_: Any) -> None:
        nonlocal found
        found = True

    tvm_ffi.structural_walk(node, [(kind, visit) for kind in node_types], order="post")
    return found


def reads_memory(expr: Any) -> bool:
    """Whether ``expr`` loads from any buffer."""
    return contains(expr, tvm.ir.TensorLoad)


def reads_buffer(expr: Any, buffer: Any) -> bool:
    """Whether ``expr`` loads from ``buffer``."""
    found = False

    def visit(load: Any) -> None:
        nonlocal found
        if load.source.same_as(buffer):
            found = True

    tvm_ffi.structural_walk(expr, (tvm.ir.TensorLoad, visit), order="post")
    return found


def touches_buffer(stmt: Any, buffer: Any) -> bool:
    """Whether ``stmt`` loads from or stores to ``buffer`` anywhere."""
    found = False

    def load(node: Any) -> None:
        nonlocal found
        if node.source.same_as(buffer):
            found = True

    def store(node: Any) -> None:
        nonlocal found
        if node.buffer.same_as(buffer):
            found = True

    tvm_ffi.structural_walk(
        stmt, [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store)], order="post"
    )
    return found


def is_block_barrier(stmt: Any) -> bool:
    """Whether ``stmt`` is ``T.sync_threads()`` (a barrier among one block's threads)."""
    if not isinstance(stmt, tirx.Evaluate) or not isinstance(stmt.value, tvm.ir.Call):
        return False
    call = stmt.value
    if op_name(call) != "tirx.tvm_storage_sync":
        return False
    scope = str(call.args[0].value) if call.args else scopes.SHARED
    return scope in _BLOCK_BARRIER_SCOPES


def thread_allreduce(stmt: Any) -> tuple[Any, Any] | None:
    """``(reducer, call)`` when ``stmt`` is a ``reduce_scope`` attribute around an allreduce."""
    if not isinstance(stmt, tirx.AttrStmt) or stmt.attr_key != "reduce_scope":
        return None
    body = stmt.body
    if (
        isinstance(body, tirx.Evaluate)
        and isinstance(body.value, tvm.ir.Call)
        and op_name(body.value) == "tirx.tvm_thread_allreduce"
    ):
        return stmt.node, body.value
    return None


def tile_regions(op: Any) -> list[Region]:
    """The buffer regions a described tile op reads or writes."""
    if isinstance(op, CopyOp | CumsumOp | ReduceOp):
        return [op.src, op.dst]
    if isinstance(op, FillOp):
        return [op.dst]
    if isinstance(op, GemmOp):
        return [op.a, op.b, op.c]
    if isinstance(op, AtomicOp):
        value = [op.value] if isinstance(op.value, Region) else []
        return [op.dst, *value, *([] if op.prev is None else [op.prev])]
    if isinstance(op, PrintOp):
        return [op.value] if isinstance(op.value, Region) else []
    return []


def is_element_atomic(op: Any) -> bool:
    """Whether the described tile op is a scalar atomic (``T.atomic_add(C[i], v)``:
    one element, a scalar value): TileLang's per-thread element atomic, which every
    thread that reaches it runs (a tile atomic updates each element once)."""
    return isinstance(op, AtomicOp) and not isinstance(op.value, Region)


def has_block_level_element_atomic(body: Any) -> bool:
    """Whether ``body`` runs a scalar atomic outside every ``T.Parallel`` loop (there
    each thread of the block runs it, so the block's threads must be run)."""
    found = [False]

    def walk(stmt: Any) -> None:
        if found[0] or stmt is None:
            return
        if isinstance(stmt, tirx.SeqStmt):
            for child in stmt.seq:
                walk(child)
        elif isinstance(stmt, tirx.For):
            kind = stmt.annotations.get(LOOP_KIND_KEY) if stmt.annotations else None
            if kind is None or str(kind) != "parallel":
                walk(stmt.body)
        elif isinstance(stmt, tirx.IfThenElse):
            walk(stmt.then_case)
            walk(stmt.else_case)
        elif isinstance(stmt, tirx.Evaluate):
            found[0] = is_tile_op(stmt.value) and is_element_atomic(describe(stmt.value))
        elif isinstance(getattr(stmt, "body", None), tirx.Stmt):
            walk(stmt.body)

    walk(body)
    return found[0]


# ---------------------------------------------------------------- thread space


@dataclass(frozen=True)
class ThreadSpace:
    """The thread Vars of a block (``threadIdx.x`` first) and their extents."""

    variables: tuple[Any, ...]
    extents: tuple[Any, ...]

    def linear_index(self) -> Any:
        """``tx + X * (ty + Y * tz)``: the thread's position in a per-thread array."""
        index: Any = None
        for var, extent in reversed(list(zip(self.variables, self.extents, strict=True))):
            index = var if index is None else var + extent * index
        return index

    def count(self) -> int:
        """Threads per block.

        Raises:
            UnsupportedError: an extent is not a compile-time constant.
        """
        total = 1
        for extent in self.extents:
            if not isinstance(extent, tirx.IntImm):
                raise UnsupportedError(
                    f"on CPU targets a block whose threads keep values across barriers needs "
                    f"a constant thread count, got extent {extent}"
                )
            total *= int(extent.value)
        return total

    def nest(self, body: Any, over: list[Any] | None = None, *, mark: bool = True) -> Any:
        """Serial loops over the threads in ``over`` (default: all), x innermost; with
        ``mark`` the outermost loop carries `THREAD_NEST_KEY` (it is one region: each
        thread runs its part of ``body`` in turn)."""
        chosen = [
            (v, e)
            for v, e in zip(self.variables, self.extents, strict=True)
            if over is None or any(v.same_as(o) for o in over)
        ]
        for position, (var, extent) in enumerate(chosen):
            outermost = position == len(chosen) - 1
            annotations = {THREAD_NEST_KEY: tirx.const(1, "int32")} if outermost and mark else None
            body = tirx.For(var, 0, extent, tirx.ForKind.SERIAL, body, annotations=annotations)
        return body


# ---------------------------------------------------------------- accesses


class SharedAccesses:
    """Which block-shared buffer elements a piece of code reads and writes.

    Each access is ``(write, indices)``; ``indices`` is None for a whole tile
    (a tile op's region) or an address taken.
    """

    def __init__(self, threads: tuple[Any, ...] = ()) -> None:
        self.threads = threads
        self.by_buffer: dict[Any, list[tuple[bool, tuple[Any, ...] | None]]] = {}

    @staticmethod
    def of(node: Any, threads: tuple[Any, ...]) -> SharedAccesses:
        acc = SharedAccesses(threads)

        def add(buffer: Any, write: bool, indices: Any) -> None:
            if scope_of(buffer) in _BLOCK_SHARED_SCOPES:
                key = tuple(indices) if indices is not None else None
                acc.by_buffer.setdefault(buffer, []).append((write, key))

        def visit_load(load: Any) -> None:
            add(load.source, False, load.indices)

        def visit_store(store: Any) -> None:
            add(store.buffer, True, store.indices)

        def visit_call(call: Any) -> None:
            name = op_name(call)
            if name == "tl.region" and isinstance(call.args[0], tvm.ir.TensorLoad):
                add(call.args[0].source, int(call.args[1]) != ACCESS_READ, None)
            elif name in ("tirx.address_of", "tirx.tvm_access_ptr"):
                for arg in call.args:
                    if isinstance(arg, tvm.ir.TensorLoad):
                        add(arg.source, True, None)
                    elif isinstance(arg, tvm.ir.Var) and isinstance(
                        getattr(arg, "ty", None), tirx.BufferType
                    ):
                        add(arg, True, None)

        tvm_ffi.structural_walk(
            node,
            [
                (tvm.ir.TensorLoad, visit_load),
                (tirx.BufferStore, visit_store),
                (tvm.ir.Call, visit_call),
            ],
            order="pre",
        )
        return acc

    def _own_element(self, a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
        # The same index, naming every thread Var: each thread touches its own element
        # (TileLang's thread-sync planning makes the same exception).
        if a is None or b is None or len(a) != len(b) or not self.threads:
            return False
        if not all(tvm_ffi.structural_equal(x, y) for x, y in zip(a, b, strict=True)):
            return False
        return all(any(uses_any(i, {t}) for i in a) for t in self.threads)

    def conflicts_with(self, other: SharedAccesses) -> bool:
        """Whether a thread's access in ``other`` may touch what another thread's access
        in ``self`` touches, one of them a write."""
        for buffer, mine in self.by_buffer.items():
            for write_b, index_b in other.by_buffer.get(buffer, ()):
                for write_a, index_a in mine:
                    if (write_a or write_b) and not self._own_element(index_a, index_b):
                        return True
        return False

    def union(self, other: SharedAccesses) -> SharedAccesses:
        """Both sets of accesses."""
        out = SharedAccesses(self.threads or other.threads)
        for source in (self, other):
            for buffer, items in source.by_buffer.items():
                out.by_buffer.setdefault(buffer, []).extend(items)
        return out


# ---------------------------------------------------------------- uniformity


def thread_dependent_values(body: Any, thread_vars: list[Any]) -> set[Any]:
    """The thread Vars plus every local buffer and bound Var whose value may differ
    between the threads of a block (written with a thread-dependent value or index,
    under a thread-dependent branch or loop, or by a thread reduction)."""
    dependent: set[Any] = set(thread_vars)
    while True:
        before = len(dependent)
        _mark_dependent(body, dependent, divergent=False)
        if len(dependent) == before:
            return dependent


def _mark_dependent(stmt: Any, dep: set[Any], divergent: bool) -> None:
    if isinstance(stmt, tirx.SeqStmt):
        for item in stmt.seq:
            _mark_dependent(item, dep, divergent)
    elif isinstance(stmt, tirx.BufferStore):
        if is_local(stmt.buffer) and (
            divergent or uses_any(stmt.value, dep) or any(uses_any(i, dep) for i in stmt.indices)
        ):
            dep.add(stmt.buffer)
    elif isinstance(stmt, tirx.Bind):
        if divergent or uses_any(stmt.value, dep):
            dep.add(stmt.var)
    elif isinstance(stmt, tirx.LetStmt):
        if divergent or uses_any(stmt.value, dep):
            dep.add(stmt.var)
        _mark_dependent(stmt.body, dep, divergent)
    elif isinstance(stmt, tirx.For):
        inner = divergent or uses_any(stmt.min, dep) or uses_any(stmt.extent, dep)
        _mark_dependent(stmt.body, dep, inner)
    elif isinstance(stmt, tirx.While):
        _mark_dependent(stmt.body, dep, divergent or uses_any(stmt.condition, dep))
    elif isinstance(stmt, tirx.IfThenElse):
        inner = divergent or uses_any(stmt.condition, dep)
        _mark_dependent(stmt.then_case, dep, inner)
        if stmt.else_case is not None:
            _mark_dependent(stmt.else_case, dep, inner)
    elif isinstance(stmt, tirx.AttrStmt):
        if thread_allreduce(stmt) is not None:
            _mark_written_locals(stmt, dep)
        else:
            _mark_dependent(stmt.body, dep, divergent)
    elif isinstance(stmt, tirx.Evaluate) and is_tile_op(stmt.value):
        op = describe(stmt.value)
        uniform_fill = isinstance(op, FillOp) and not divergent and not uses_any(stmt.value, dep)
        if not uniform_fill:
            for region in tile_regions(op):
                if region.access != ACCESS_READ and is_local(region.buffer):
                    dep.add(region.buffer)
    elif isinstance(stmt, tirx.Evaluate):
        _mark_written_locals(stmt, dep)


def _mark_written_locals(node: Any, dep: set[Any]) -> None:
    # Calls that take a local buffer (address_of, allreduce results) may write it.
    def visit(load: Any) -> None:
        if is_local(load.source):
            dep.add(load.source)

    tvm_ffi.structural_walk(node, (tvm.ir.TensorLoad, visit), order="post")


def flatten_seq(stmt: Any) -> list[Any]:
    """The statements of ``stmt`` in order, with nested ``SeqStmt``s opened."""
    if isinstance(stmt, tirx.SeqStmt):
        return [s for item in stmt.seq for s in flatten_seq(item)]
    return [stmt]
