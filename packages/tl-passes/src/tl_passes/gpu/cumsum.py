"""``T.cumsum`` and ``T.cummax`` (inclusive scans, `tl_ir.ops.scan_parts`) on GPU targets.

A destination every thread holds (replicated fragment, local array) is
scanned whole by every thread, whatever the source's scope (a shared/global
source is only read). Shared/global destinations are scanned cooperatively: rows split over the block, each thread scans its
row into registers, a barrier, then writes it back (so reads and writes of a
shared tile never race and no barrier sits under the per-thread row guard).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tvm import tirx

from tl_ir.ops import scan_parts
from tl_passes.gpu.barriers import barrier
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.operand import Operand
from tl_passes.gpu.tir_build import cast, for_loop, guard, seq, unflatten

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering


def lower_cumsum(kernel: KernelLowering, op: Any) -> Any:
    """The per-thread code of the ``T.cumsum``/``T.cummax`` ``op`` (module docstring)."""
    src, dst = Operand(op.src, kernel), Operand(op.dst, kernel)
    if src.partitioned or dst.partitioned:
        raise GpuLoweringError(f"T.cum{op.kind}: fragment operands must be replicated")
    identity, combine = scan_parts(op.kind, str(dst.dtype))
    dim = op.dim
    length = src.extents[dim]
    rows = [e for d, e in enumerate(src.extents) if d != dim]
    to_dst = _dst_index(src, dst, op.kind)
    running = kernel.local_array("scan", [1], dst.dtype)
    jv = kernel.fresh("j")

    def per_row(row_index: list[Any]) -> Any:
        position = (length - 1 - jv) if op.reverse else jv
        full = [*row_index[:dim], position, *row_index[dim:]]
        value = cast(src.load(full), dst.dtype)
        inside = src.inside(full)
        if inside is not None:
            value = tirx.if_then_else(inside, value, identity)
        add = tirx.BufferStore(running, combine(tirx.BufferLoad(running, [0]), value), [0])
        at = to_dst(full)
        out = guard(dst.store(at, tirx.BufferLoad(running, [0])), dst.inside(at))
        return seq(
            [
                tirx.BufferStore(running, identity, [0]),
                for_loop(jv, length, seq([add, out])),
            ]
        )

    if dst.per_thread:
        # Every thread holds all of the destination, so every thread scans all
        # of it; a shared/global source is only read, so nothing races.
        return seq([tirx.AllocBuffer(running), kernel.every(rows, per_row)])
    scan = _cooperative_scan(kernel, src, dst, op, rows, to_dst)
    return seq([tirx.AllocBuffer(running), scan])


def _dst_index(src: Operand, dst: Operand, kind: str) -> Callable[[list[Any]], list[Any]]:
    """The destination index of a source index: the tiles' non-unit dims pair up in
    order, the destination's unit dims are 0 (a source with extra leading unit dims,
    such as the stage dim of a tile in a ``T.Pipelined`` ring, `gpu.pipelined_ring`).

    Raises:
        GpuLoweringError: the tiles' non-unit extents differ.
    """
    if src.squeezed != dst.squeezed:
        raise GpuLoweringError(
            f"T.cum{kind}: the source {src.name} {src.extents} and the destination "
            f"{dst.name} {dst.extents} must have the same extents"
        )
    if list(src.extents) == list(dst.extents):
        return lambda index: list(index)
    kept = [d for d, e in enumerate(src.extents) if e != 1]
    return lambda index: dst.expand([index[d] for d in kept])


def _cooperative_scan(
    kernel: KernelLowering,
    src: Operand,
    dst: Operand,
    op: Any,
    rows: list[int],
    to_dst: Callable[[list[Any]], list[Any]],
) -> Any:
    """Rows split over threads: scan each row into registers, barrier, write back.

    Reading all of a row before any thread writes keeps shared reads and
    writes apart, so no barrier falls inside the per-thread row guard.
    """
    dim = op.dim
    identity, combine = scan_parts(op.kind, str(dst.dtype))
    length = src.extents[dim]
    values = kernel.local_array("scan_row", [length], dst.dtype)
    running = kernel.local_array("scan_sum", [1], dst.dtype)
    t = kernel.num_threads
    row_count = math.prod(rows)
    it = kernel.fresh("it")
    flat = it * t + kernel.tid
    row_index = unflatten(flat, rows)
    valid = None if row_count % t == 0 else flat < row_count
    j1, j2 = kernel.fresh("j"), kernel.fresh("j")
    position = (length - 1 - j1) if op.reverse else j1
    full = [*row_index[:dim], position, *row_index[dim:]]
    value = cast(src.load(full), dst.dtype)
    inside = src.inside(full)
    if inside is not None:
        value = tirx.if_then_else(inside, value, identity)
    scan = seq(
        [
            tirx.BufferStore(running, identity, [0]),
            for_loop(
                j1,
                length,
                seq(
                    [
                        tirx.BufferStore(
                            running, combine(tirx.BufferLoad(running, [0]), value), [0]
                        ),
                        tirx.BufferStore(values, tirx.BufferLoad(running, [0]), [position]),
                    ]
                ),
            ),
        ]
    )
    full2 = to_dst([*row_index[:dim], j2, *row_index[dim:]])
    write = for_loop(
        j2,
        length,
        guard(dst.store(full2, tirx.BufferLoad(values, [j2])), dst.inside(full2)),
    )
    steps = -(-row_count // t)
    body = seq([guard(scan, valid), barrier(), guard(write, valid), barrier()])
    return seq([tirx.AllocBuffer(values), tirx.AllocBuffer(running), for_loop(it, steps, body)])
