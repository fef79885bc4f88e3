"""`gpu-plan-shared-memory`: size the block's dynamic shared memory; static where needed.

``T.alloc_shared`` tiles have scope ``shared.dyn``: on CUDA and ROCm TVM
merges them into one dynamic allocation whose size the launch passes. This
pass records an upper bound of that size (every ``shared.dyn`` tile at a
16-byte aligned offset, no reuse; a ``T.Pipelined`` ring's tiles carry their
``num_stages`` slots in their shape) in the function attribute
``tl.dynamic_shared_memory_bytes``, which GPU codegens put into the launch
metadata; with several consecutive ``T.Kernel`` launches that is the largest,
and ``tl.kernel_dynamic_shared_memory_bytes`` lists each launch's size in
program order. Targets without dynamic shared memory (Metal, WebGPU) get
``static=True``: the tiles become static ``shared`` arrays and the recorded
size is 0.

Loops of constant extent 0 (a ``T.Pipelined(T.ceildiv(K, block_K))`` with ``K = 0``) are
removed first, with the ``shared.dyn`` tiles only they used: TVM drops such loops in its
own build, after this size was recorded, and its shared memory merge then fails on the
tiles left without any access.

A ``shared.dyn`` tile the kernel only ever touches at one constant index (a
one-element flag or accumulator, or a larger tile of which only ``[0]`` is used)
becomes a static ``shared`` array instead: TVM shrinks such a tile to one element
and its dynamic shared memory merge then fails on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_passes.pass_base import PassContext, PrimFuncPass

DYNAMIC_SHARED_ATTR = "tl.dynamic_shared_memory_bytes"
ALIGNMENT = 16


def _bytes(buffer: Any) -> int:
    total = max(1, int(tvm.DataType(str(buffer.ty.dtype)).bits) // 8)
    for extent in buffer.shape:
        if not isinstance(extent, tirx.IntImm):
            raise ValueError(
                f"shared tile {buffer.name}: expected a static shape, got {list(buffer.shape)}"
            )
        total *= int(extent)
    return total


def scoped_buffers(body: Any, scope: str) -> list[Any]:
    """The buffers of storage ``scope`` allocated in ``body``, in program order."""
    found: list[Any] = []

    def visit(alloc: Any) -> None:
        if str(alloc.buffer.ty.storage_scope) == scope:
            found.append(alloc.buffer)

    tvm_ffi.structural_walk(body, (tirx.AllocBuffer, visit), order="pre")
    return found


def dynamic_shared_buffers(body: Any) -> list[Any]:
    """The ``shared.dyn`` buffers allocated in ``body``, in program order."""
    return scoped_buffers(body, scopes.SHARED_DYN)


def rescope(body: Any, old_scope: str, new_scope: str) -> Any:
    """``body`` with every buffer of ``old_scope`` replaced by one of ``new_scope``."""
    replacements: list[tuple[Any, Any]] = []
    for buffer in scoped_buffers(body, old_scope):
        new = tirx.decl_buffer(
            buffer.shape, str(buffer.ty.dtype), name=str(buffer.name), scope=new_scope
        )
        replacements.append((buffer, new))
    if not replacements:
        return body

    def replace(var: Any) -> Any:
        for old, new in replacements:
            if var.same_as(old):
                return new
        return var

    return tvm_ffi.structural_map(body, (tvm.ir.Var, replace), order="post")


def _single_index_buffers(body: Any) -> list[Any]:
    """The ``shared.dyn`` buffers every access of which reads or writes one constant index.

    Only plain loads and stores count as accesses; a buffer named anywhere else (a
    tile-op region, an address taken) is left alone.
    """
    candidates = dynamic_shared_buffers(body)
    if not candidates:
        return []
    indices: dict[int, set[tuple[int, ...]]] = {i: set() for i in range(len(candidates))}
    accesses = [0] * len(candidates)
    mentions = [0] * len(candidates)

    def position(buffer: Any) -> int | None:
        for index, candidate in enumerate(candidates):
            if buffer.same_as(candidate):
                return index
        return None

    def record(buffer: Any, access: Any) -> None:
        at = position(buffer)
        if at is None:
            return
        accesses[at] += 1
        if all(isinstance(i, tirx.IntImm) for i in access):
            indices[at].add(tuple(int(i) for i in access))
        else:
            indices[at].add(())  # a computed index: not a single-index buffer

    def visit(node: Any) -> None:
        if isinstance(node, tvm.ir.TensorLoad):
            record(node.source, node.indices)
        elif isinstance(node, tirx.BufferStore):
            record(node.buffer, node.indices)
        elif isinstance(node, tvm.ir.Var):
            at = position(node)
            if at is not None:
                mentions[at] += 1

    tvm_ffi.structural_walk(body, visit, order="pre")
    # Each access names the buffer once, the allocation once more.
    return [
        buffer
        for at, buffer in enumerate(candidates)
        if accesses[at]
        and len(indices[at]) == 1
        and () not in indices[at]
        and mentions[at] == accesses[at] + 1
    ]


def rescope_single_index_tiles(body: Any) -> Any:
    """``body`` with the `_single_index_buffers` made static ``shared`` arrays."""
    singles = _single_index_buffers(body)
    if not singles:
        return body
    replacements = [
        (b, tirx.decl_buffer(b.shape, str(b.ty.dtype), name=str(b.name), scope=scopes.SHARED))
        for b in singles
    ]

    def replace(var: Any) -> Any:
        for old, new in replacements:
            if var.same_as(old):
                return new
        return var

    return tvm_ffi.structural_map(body, (tvm.ir.Var, replace), order="post")


def dynamic_shared_bytes(body: Any) -> int:
    """Bytes of dynamic shared memory the tiles of ``body`` need (16-byte aligned each)."""
    total = 0
    for buffer in dynamic_shared_buffers(body):
        total += -(-_bytes(buffer) // ALIGNMENT) * ALIGNMENT
    return total


def drop_zero_trip_loops(body: Any) -> Any:
    """``body`` with every loop of constant extent 0 replaced by a no-op."""

    def visit(loop: Any) -> Any:
        if isinstance(loop.extent, tirx.IntImm) and int(loop.extent) <= 0:
            return tirx.Evaluate(0)
        return loop

    return tvm_ffi.structural_map(body, (tirx.For, visit), order="post")


def drop_unused_dynamic_shared(body: Any) -> Any:
    """``body`` without the allocations of ``shared.dyn`` tiles nothing else names."""
    candidates = dynamic_shared_buffers(body)
    if not candidates:
        return body
    mentions = [0] * len(candidates)

    def visit(node: Any) -> None:
        for index, candidate in enumerate(candidates):
            if node.same_as(candidate):
                mentions[index] += 1

    tvm_ffi.structural_walk(body, (tvm.ir.Var, visit), order="pre")
    # The allocation names its buffer once.
    unused = [buffer for at, buffer in enumerate(candidates) if mentions[at] <= 1]
    if not unused:
        return body

    def sequence(seq: Any) -> Any:
        kept = [
            stmt
            for stmt in seq.seq
            if not (
                isinstance(stmt, tirx.AllocBuffer) and any(stmt.buffer.same_as(b) for b in unused)
            )
        ]
        if len(kept) == len(seq.seq):
            return seq
        return tirx.SeqStmt(kept) if kept else tirx.Evaluate(0)

    return tvm_ffi.structural_map(body, (tirx.SeqStmt, sequence), order="post")


def make_shared_static(body: Any) -> Any:
    """``body`` with every ``shared.dyn`` buffer replaced by a static ``shared`` one."""
    return rescope(body, scopes.SHARED_DYN, scopes.SHARED)


@dataclass(frozen=True)
class GpuPlanSharedMemoryPass(PrimFuncPass):
    """Record the dynamic shared memory size (or make shared tiles static).

    Args:
        static: make ``shared.dyn`` tiles static ``shared`` arrays (Metal, WebGPU).
    """

    name: ClassVar[str] = "gpu-plan-shared-memory"
    static: bool = False

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` with ``tl.dynamic_shared_memory_bytes`` recorded (and static tiles)."""
        from tl_passes.gpu.launches import KERNEL_SHARED_ATTR, kernel_functions

        func = func.with_body(drop_unused_dynamic_shared(drop_zero_trip_loops(func.body)))
        if self.static:
            func = func.with_body(make_shared_static(func.body))
        else:
            func = func.with_body(rescope_single_index_tiles(func.body))
        kernels = kernel_functions(func)
        sizes = [0 if self.static else dynamic_shared_bytes(k.body) for _, k in kernels]
        func = func.with_attr(DYNAMIC_SHARED_ATTR, tirx.IntImm("int64", max(sizes)))
        if len(kernels) > 1:
            func = func.with_attr(
                KERNEL_SHARED_ATTR, [tirx.IntImm("int64", size) for size in sizes]
            )
        return func
