"""``T.copy`` out of a tensor-core accumulator (`MMA`) into global or shared memory.

Each thread stores its own elements; where the instruction's accumulator map puts
two consecutive elements of a lane on consecutive columns of one row (``c0, c1``
of the m16n8 accumulator), the pair goes out as one vector access (64-bit for
fp32, 32-bit for fp16) when the destination's rows and start column are aligned
to it; a pair is then wholly inside or outside the destination.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tvm
from tvm import tirx

from tl_ir import scopes
from tl_passes.gpu.layout_base import MMA
from tl_passes.gpu.operand import Operand
from tl_passes.gpu.tir_build import cast, const_int, guard, int_imm, seq

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering

PAIR = 2


def fragment_pair_copy(kernel: KernelLowering, src: Operand, dst: Operand) -> Any | None:
    """The copy of an `MMA` fragment ``src`` into global/shared ``dst`` in pairs, or None
    when the pairs do not fit (module docstring)."""
    layout = src.layout
    if layout is None or layout.kind != MMA or layout.tiles is None:
        return None
    if dst.scope != scopes.GLOBAL and dst.scope not in scopes.SHARED_SCOPES:
        return None
    tiles = layout.tiles
    if dst.squeezed != [tiles.rows, tiles.cols] or dst.extents[-1] != tiles.cols:
        return None
    bits = int(tvm.DataType(dst.dtype).bits)
    if bits * PAIR > kernel.traits.vector_bytes * 8 or tiles.per_tile % PAIR:
        return None
    for lane in range(tiles.warp_size):
        for e in range(0, tiles.per_tile, PAIR):
            row, col = tiles.c_map(lane, e)
            if col % PAIR or tiles.c_map(lane, e + 1) != (row, col + 1):
                return None
    if tiles.tile_n % PAIR or (tiles.cols // tiles.warps_n) % PAIR:
        return None
    size = const_int(dst.buffer.shape[-1])
    if size is None or size % PAIR:
        return None
    start = tvm.sym.Analyzer().simplify(tirx.floormod(dst.region.mins[-1], PAIR))
    if const_int(start) != 0:
        return None
    regs = kernel.local_buffers[src.name]
    stmts = []
    for local in range(0, tiles.local_size, PAIR):
        row, col = tiles.element(kernel.tid, local)
        d_index = dst.expand([row, col])
        full = dst.full_index(d_index)
        lanes = [cast(tirx.BufferLoad(regs, [int_imm(local + i)]), dst.dtype) for i in range(PAIR)]
        value = tirx.Shuffle(lanes, [int_imm(i) for i in range(PAIR)])
        index = [*full[:-1], tirx.Ramp(full[-1], int_imm(1), PAIR)]
        stmts.append(guard(tirx.BufferStore(dst.buffer, value, index), dst.inside(d_index)))
    return seq(stmts)
