"""A region repeated by a loop every thread runs, with that loop moved inside its
thread loop (used by `cpu-lower-launch`; see `interchange_copy_loop`)."""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import contains, reads_buffer, uses_any
from tl_codegen_cpu.lowering.thread_lockstep import is_copy_body, lane_step
from tl_ir.launch import rebuild_loop


def _vars_in(expr: Any, candidates: set[Any]) -> set[Any]:
    found: set[Any] = set()

    def visit(var: Any) -> None:
        for c in candidates:
            if c.same_as(var):
                found.add(c)

    tvm_ffi.structural_walk(expr, (tvm.ir.Var, visit), order="post")
    return found


def interchange_copy_loop(loop: Any, threads: set[Any]) -> Any | None:
    """``for k: for t...: S`` as ``for t...: for k: S`` when any order of the iterations
    stores the same values, or None.

    A region repeated by a loop every thread runs alike (``for tk: B_shared[tn, tk] =
    B[row tn, tk]``, each iteration a region of its own) walks memory with the thread
    index innermost: one row per thread, the wrong way for SIMD. Reordering is proven
    safe when ``S`` only stores (loops and stores, nothing else), reads no buffer it
    stores, and each store's value is fixed by the element it stores: every loop or
    thread Var the value uses is the only such Var of one of the store's indices, with
    a constant non-zero step (so equal elements mean equal values).
    """
    if loop.kind != tirx.ForKind.SERIAL or not isinstance(loop.body, tirx.For):
        return None
    nest = loop.body
    thread_loops: list[Any] = []
    body: Any = nest
    while isinstance(body, tirx.For) and any(body.loop_var.same_as(t) for t in threads):
        thread_loops.append(body)
        body = body.body
    if not thread_loops or uses_any(loop.min, threads) or uses_any(loop.extent, threads):
        return None
    if not is_copy_body(body):
        return None
    stores: list[Any] = []
    tvm_ffi.structural_walk(body, (tirx.BufferStore, stores.append), order="post")
    stored = [s.buffer for s in stores]
    analyzer = tvm.sym.Analyzer()
    inner: set[Any] = set()
    tvm_ffi.structural_walk(body, (tirx.For, lambda f: inner.add(f.loop_var)))
    iteration_vars = {loop.loop_var, *threads, *inner}
    for store in stores:
        if any(reads_buffer(store.value, b) for b in stored):
            return None
        if contains(store.value, tvm.ir.Call):
            return None
        for var in _vars_in(store.value, iteration_vars):
            if not any(
                _vars_in(index, iteration_vars) == {var}
                and (lane_step(index, var, analyzer) or 0) != 0
                for index in store.indices
            ):
                return None
    swapped = rebuild_loop(loop, body=body)
    for thread_loop in reversed(thread_loops):
        swapped = rebuild_loop(thread_loop, body=swapped)
    return swapped
