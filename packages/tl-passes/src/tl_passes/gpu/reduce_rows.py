"""Row reductions of a matrix-instruction accumulator (`MMA`) into its rows (`ROWS`).

Each thread folds its own elements into one partial per row it holds; the lanes
holding the same rows (an XOR group of lanes, 4 for the m16n8 accumulator)
combine their partials with warp shuffles (through shared memory on a target
without them); when the warps split the columns, one representative lane per
row and warp publishes its partial to a shared table and every holder folds
the warps' entries. The result stays on the threads that hold the row, in
registers: nothing is replicated across the block.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tvm import tirx

from tl_passes.gpu.barriers import barrier
from tl_passes.gpu.layout_base import MMA, ROWS
from tl_passes.gpu.operand import Operand
from tl_passes.gpu.tir_build import cast, guard, int_imm, seq

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering


def lower_row_reduce(
    kernel: KernelLowering,
    op: Any,
    src: Operand,
    dst: Operand,
    identity: Any,
    combine: Callable[[Any, Any], Any],
) -> Any | None:
    """The row reduction ``op`` when ``src`` is `MMA` and ``dst`` holds its `ROWS`
    (module docstring), or None for the general path."""
    if src.layout is None or dst.layout is None or op.dim != 1:
        return None
    if src.layout.kind != MMA or dst.layout.kind != ROWS:
        return None
    tiles, rows = src.layout.tiles, dst.layout.tiles
    if tiles is None or rows is None or not tiles.same_rows(rows):
        return None
    dtype = dst.dtype
    absolute = op.kind in ("abssum", "absmax")
    src_regs = kernel.local_buffers[src.name]
    dst_regs = kernel.local_buffers[dst.name]
    slots = tiles.row_slots
    partial = kernel.local_array("row_part", [slots], dtype)

    def at(s: int) -> Any:
        return tirx.BufferLoad(partial, [int_imm(s)])

    def put(s: int, value: Any) -> Any:
        return tirx.BufferStore(partial, value, [int_imm(s)])

    stmts: list[Any] = [tirx.AllocBuffer(partial)]
    stmts += [put(s, identity) for s in range(slots)]
    for local in range(tiles.local_size):
        value = cast(tirx.BufferLoad(src_regs, [int_imm(local)]), dtype)
        if absolute:
            value = tirx.abs(value)
        s = tiles.row_local(local)
        stmts.append(put(s, combine(at(s), value)))
    masks = tiles.row_lane_masks()
    lane = kernel.tid % tiles.warp_size
    shuffle = kernel.traits.warp_shuffle
    if shuffle is not None and kernel.warp_size == tiles.warp_size:
        for mask in masks:
            for s in range(slots):
                other = tirx.call_intrin(
                    dtype,
                    shuffle.intrinsic,
                    tirx.const(shuffle.mask(tiles.warp_size), "uint32"),
                    at(s),
                    tirx.bitwise_xor(lane, int_imm(mask)),
                    int_imm(tiles.warp_size),
                    int_imm(tiles.warp_size),
                )
                stmts.append(put(s, combine(at(s), other)))
    elif masks:
        stmts += _lanes_through_shared(kernel, partial, slots, dtype, masks, combine)
    if tiles.warps_n > 1:
        stmts += _warps_through_shared(kernel, partial, dtype, masks, combine, tiles)
    for s in range(slots):
        value = at(s) if op.clear else combine(tirx.BufferLoad(dst_regs, [int_imm(s)]), at(s))
        stmts.append(tirx.BufferStore(dst_regs, cast(value, dst.dtype), [int_imm(s)]))
    return seq(stmts)


def _lanes_through_shared(
    kernel: KernelLowering,
    partial: Any,
    slots: int,
    dtype: str,
    masks: tuple[int, ...],
    combine: Callable[[Any, Any], Any],
) -> list[Any]:
    """Combine the partials of the lanes in the XOR group of ``masks`` through a shared
    table (targets without warp shuffles)."""
    table = kernel.shared_array("row_lanes", [kernel.num_threads, slots], dtype)
    publish = [
        tirx.BufferStore(table, tirx.BufferLoad(partial, [int_imm(s)]), [kernel.tid, int_imm(s)])
        for s in range(slots)
    ]
    offsets = [0]
    for mask in masks:
        offsets += [o ^ mask for o in offsets]
    gather = []
    for s in range(slots):
        value: Any = None
        for offset in sorted(offsets):
            entry = tirx.BufferLoad(
                table, [tirx.bitwise_xor(kernel.tid, int_imm(offset)), int_imm(s)]
            )
            value = entry if value is None else combine(value, entry)
        gather.append(tirx.BufferStore(partial, value, [int_imm(s)]))
    return [tirx.AllocBuffer(table), *publish, barrier(), *gather, barrier()]


def _warps_through_shared(
    kernel: KernelLowering,
    partial: Any,
    dtype: str,
    masks: tuple[int, ...],
    combine: Callable[[Any, Any], Any],
    tiles: Any,
) -> list[Any]:
    """Combine the partials of the warps that split the columns: one lane per row and
    warp publishes to ``[warps_n, rows]``, then every holder folds its rows' entries."""
    table = kernel.shared_array("row_warps", [tiles.warps_n, tiles.rows], dtype)
    lane = kernel.tid % tiles.warp_size
    warp_col = (kernel.tid // tiles.warp_size) % tiles.warps_n
    group_bits = 0
    for mask in masks:
        group_bits |= mask
    representative = tirx.bitwise_and(lane, int_imm(group_bits)) == 0 if group_bits else None
    publish = []
    gather = []
    for s in range(tiles.row_slots):
        row = tiles.row_of(kernel.tid, s)
        publish.append(
            tirx.BufferStore(table, tirx.BufferLoad(partial, [int_imm(s)]), [warp_col, row])
        )
        value: Any = tirx.BufferLoad(table, [int_imm(0), row])
        for w in range(1, tiles.warps_n):
            value = combine(value, tirx.BufferLoad(table, [int_imm(w), row]))
        gather.append(tirx.BufferStore(partial, value, [int_imm(s)]))
    return [
        tirx.AllocBuffer(table),
        guard(seq(publish), representative),
        barrier(),
        *gather,
        barrier(),
    ]
