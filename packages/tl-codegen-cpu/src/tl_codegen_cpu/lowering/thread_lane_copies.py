"""Per-lane copies of a thread's local arrays for the lock-step schedule
(`thread_lockstep`).

Run one thread after another, a thread-local array that a region writes without
the thread index (a thread's staging registers ``A_local[k]``) can be one array
per block: each thread overwrites it in turn. In lock step the lanes interleave,
so each lane needs its own copy: `privatize` gives every such array a flat,
lane-major copy per lane (lane ``t``'s element ``i`` at ``t * size + flat(i)``).
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import is_local, uses_any
from tl_ir.scopes import LOCAL


def flat_size(buffer: Any) -> int:
    """The element count of a buffer of constant shape.

    Raises:
        ValueError: a dimension is not a constant (naming the buffer).
    """
    size = 1
    for dim in buffer.shape:
        size *= int(dim.value) if isinstance(dim, tirx.IntImm) else 0
    if size <= 0:
        raise ValueError(f"{buffer.name}: per-lane copies need a constant shape")
    return size


def flat_index(buffer: Any, indices: Any) -> Any:
    """The row-major offset of ``buffer[indices]`` (an expression)."""
    index: Any = None
    for position, value in enumerate(indices):
        index = value if index is None else index * buffer.shape[position] + value
    return index


def stored_without_lane(stmt: Any, lane: Any) -> list[Any]:
    """Thread-local buffers some store of ``stmt`` writes at an index free of ``lane``."""
    found: list[Any] = []

    def store(node: Any) -> None:
        if (
            is_local(node.buffer)
            and not any(uses_any(i, {lane}) for i in node.indices)
            and not any(b.same_as(node.buffer) for b in found)
        ):
            found.append(node.buffer)

    tvm_ffi.structural_walk(stmt, (tirx.BufferStore, store), order="post")
    return found


def privatize(stmt: Any, buffers: list[Any], lane: Any, extent: int) -> tuple[Any, list[Any]]:
    """``stmt`` with each of ``buffers`` replaced by a copy per lane (leading lane dim)."""
    # Flat, lane-major: lane t's copy of element i is t * size + flat(i).
    sizes = {b: flat_size(b) for b in buffers}
    wide = {
        b: tirx.decl_buffer(
            (extent * sizes[b],), str(b.ty.dtype), name=f"{b.name}_lanes", scope=LOCAL
        )
        for b in buffers
    }

    def at(old: Any, indices: Any) -> list[Any]:
        return [lane * sizes[old] + flat_index(old, indices)]

    def find(buffer: Any) -> Any:
        for old in wide:
            if old.same_as(buffer):
                return old
        return None

    def load(node: Any) -> Any:
        old = find(node.source)
        return node if old is None else tirx.BufferLoad(wide[old], at(old, node.indices))

    def store(node: Any) -> Any:
        old = find(node.buffer)
        if old is None:
            return node
        return tirx.BufferStore(wide[old], node.value, at(old, node.indices))

    def alloc(node: Any) -> Any:
        old = find(node.buffer)
        return node if old is None else tirx.AllocBuffer(wide[old])

    rewritten = tvm_ffi.structural_map(
        stmt,
        [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store), (tirx.AllocBuffer, alloc)],
        order="post",
    )
    return rewritten, list(wide.values())
