"""Threads adding into one block-shared element as a lane reduction (used by
`cpu-lower-launch`).

A block whose threads each add their value into one shared accumulator
(``T.atomic_add(acc[0], partial[0])``: an atomic on a block-local buffer is a plain
update on the CPU, `thread_regions`) runs, thread after thread, one chain of
dependent adds through memory::

    for tx in T.serial(128):
        ...                                     # the thread's own work
        acc[0] = acc[0] + partial               # every thread, the same element

When that element is the same for every thread (its index is free of the thread
and of memory) and nothing else in the region touches the accumulator, the adds
may happen in any order (the atomics' order is unspecified on a GPU), so each
thread's term is kept in a per-thread array where the add stood, and after the
thread loop the terms are summed in vector lanes into the accumulator, once
(`thread_lanes.laned_sum`: a partial vector, then a tree)::

    for tx in T.serial(128):
        ...
        acc_terms[tx] = partial
    acc[0] = acc[0] + sum(acc_terms[0:128])     # vector adds, then a tree

The term is evaluated where the add stood, so it sees the same values. The thread
loop is then free of the shared chain, and the lane steps after this one see a
nest that writes only per-thread data. Refused (the region stays as it is) when
the add sits under a condition or an inner loop, the accumulator is read or
written elsewhere in the region, or the nest runs over several thread indices.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import (
    flatten_seq,
    is_local,
    reads_buffer,
    touches_buffer,
    uses_any,
)
from tl_codegen_cpu.lowering.thread_lanes import THREAD_PATH_KEY, laned_sum
from tl_codegen_cpu.lowering.vector_isa import VectorISA
from tl_ir.launch import rebuild_loop
from tl_ir.ops import const_int
from tl_ir.scopes import LOCAL

_SUMMABLE = ("float32", "float64", "int32", "int64")


def _uniform_accumulation(store: Any, thread: Any) -> Any | None:
    """The term ``e`` of ``S[I] = S[I] + e`` (or ``e + S[I]``) with ``S`` block-shared of
    a summable dtype, ``I`` free of ``thread`` and of memory, ``e`` not reading ``S``."""
    if not isinstance(store, tirx.BufferStore) or not isinstance(store.value, tirx.Add):
        return None
    buffer = store.buffer
    if is_local(buffer) or str(buffer.ty.dtype) not in _SUMMABLE:
        return None
    if any(uses_any(i, {thread}) or reads_buffer_any(i) for i in store.indices):
        return None
    for mine, other in ((store.value.a, store.value.b), (store.value.b, store.value.a)):
        if (
            isinstance(mine, tvm.ir.TensorLoad)
            and mine.source.same_as(buffer)
            and len(mine.indices) == len(store.indices)
            and all(
                tvm_ffi.structural_equal(x, y)
                for x, y in zip(mine.indices, store.indices, strict=True)
            )
            and not reads_buffer(other, buffer)
        ):
            return other
    return None


def reads_buffer_any(expr: Any) -> bool:
    """Whether ``expr`` loads from memory."""
    found = False

    def visit(_load: Any) -> None:
        nonlocal found
        found = True

    tvm_ffi.structural_walk(expr, (tvm.ir.TensorLoad, visit), order="post")
    return found


def lane_shared_accumulations(nest: Any, isa: VectorISA) -> tuple[list[Any], Any, list[Any]]:
    """``(before, nest', after)``: ``nest`` (a region's loop over one thread index) with
    its adds into one block-shared element replaced by stores of the terms; ``before``
    allocates the terms' arrays, ``after`` sums them into the elements (module
    docstring), under a `THREAD_PATH_KEY` attribute saying so; both empty when nothing
    qualifies (``nest`` returned as it is)."""
    thread = nest.loop_var
    extent = const_int(nest.extent)
    if extent is None or const_int(nest.min) != 0 or isinstance(nest.body, tirx.For):
        return [], nest, []
    statements = flatten_seq(nest.body)
    before: list[Any] = []
    after: list[Any] = []
    names: list[str] = []
    for position, statement in enumerate(statements):
        term = _uniform_accumulation(statement, thread)
        if term is None:
            continue
        buffer = statement.buffer
        others = statements[:position] + statements[position + 1 :]
        if any(touches_buffer(other, buffer) for other in others):
            continue
        terms = tirx.decl_buffer(
            (extent,), str(buffer.ty.dtype), name=f"{buffer.name}_terms", scope=LOCAL
        )
        load = tirx.BufferLoad(terms, [thread])
        summed = laned_sum(nest, buffer, tuple(statement.indices), load, isa)
        if isinstance(summed, str):
            continue
        statements[position] = tirx.BufferStore(terms, term, [thread])
        before.append(tirx.AllocBuffer(terms))
        after += summed
        names.append(buffer.name)
    if not after:
        return [], nest, []
    body = statements[0] if len(statements) == 1 else tirx.SeqStmt(statements)
    path = f"lanes: the threads' adds into {', '.join(names)} as one vector sum over {thread.name}"
    summing = tirx.AttrStmt(
        tirx.const(0, "int32"), THREAD_PATH_KEY, tvm.ir.StringImm(path), tirx.SeqStmt(after)
    )
    return before, rebuild_loop(nest, body=body), [summing]
