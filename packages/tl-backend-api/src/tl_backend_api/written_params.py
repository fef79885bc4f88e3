"""Which buffers a kernel writes: what decides a parameter's role in the manifest
(``inout`` against ``input``), and so whether the runtime copies a result back, refuses
a read-only array, bumps a torch tensor's version, or may allocate it (``out_idx``)."""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

__all__ = ["written_buffers"]

#: ``tvm_access_ptr``'s access mask bit for a write (1 read, 2 write, 3 both).
_WRITE_MASK = 2


def written_buffers(func: tirx.PrimFunc) -> list[Any]:
    """The buffers ``func`` writes: every ``BufferStore`` target, every tile-op
    destination (``T.copy``/``T.fill``/``T.gemm``/reductions/``T.cumsum`` outputs and
    atomic targets), any tile-op region marked as written, and the memory behind a
    pointer handed out for writing (``T.access_ptr(B, "w")`` to an extern call). A view
    (``T.view``, ``T.reshape``, ``T.Tensor(shape, dtype, B.data)``) written counts as a
    write of the buffer it views, through any chain of views. Order and repeats are
    unspecified.
    """
    from tl_ir import ops

    found: list[Any] = []
    views: list[tuple[Any, Any]] = []  # (view buffer, the buffer whose memory it is)

    def on_decl(decl: Any) -> None:
        source = ops.viewed_buffer(decl)
        if source is not None:
            views.append((decl.buffer, source))

    def on_call(call: Any) -> None:
        if str(getattr(call.op, "name", "")) != "tirx.tvm_access_ptr" or len(call.args) != 5:
            return
        mask = ops.const_int(call.args[4])
        source = ops.data_buffer(call.args[1])
        if source is not None and (mask is None or mask & _WRITE_MASK):
            found.append(source)

    tvm_ffi.structural_walk(
        func.body, (tirx.BufferStore, lambda store: found.append(store.buffer)), order="pre"
    )
    tvm_ffi.structural_walk(func.body, (tirx.DeclBuffer, on_decl), order="pre")
    tvm_ffi.structural_walk(func.body, (tvm.ir.Call, on_call), order="pre")
    for op in ops.tile_ops(func):
        for value in vars(op).values():
            if isinstance(value, ops.Region) and value.access != ops.ACCESS_READ:
                found.append(value.buffer)
        # Destinations count whatever access flag they carry (T.gemm's is its C operand).
        region = op.c if isinstance(op, ops.GemmOp) else getattr(op, "dst", None)
        if isinstance(region, ops.Region):
            found.append(region.buffer)
    pending = list(found)
    while pending:  # a write through a view writes what it views (views of views too)
        buffer = pending.pop()
        for view, source in views:
            if view.same_as(buffer) and not any(source.same_as(f) for f in found):
                found.append(source)
                pending.append(source)
    return found
