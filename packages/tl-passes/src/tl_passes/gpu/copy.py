"""``T.copy`` on GPU targets.

Copies between global/shared tiles of one dtype and shape move vectors of
up to `GpuTraits.vector_bytes` (at most `GpuTraits.max_vector_lanes` lanes)
when the tiles are aligned to the vector; out of a partitioned fragment into
a differently placed one they convert through a shared staging tile;
otherwise the operands' driver (`KernelLowering.drive`) walks the elements.
Out-of-bounds source elements read as zero, out-of-bounds destination
elements are not written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tvm
from tvm import tirx

from tl_ir import scopes
from tl_passes.gpu.barriers import barrier
from tl_passes.gpu.copy_fragment import fragment_pair_copy
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.layout import PARTITIONED, same_placement
from tl_passes.gpu.operand import Operand
from tl_passes.gpu.tir_build import (
    UNROLL_LIMIT,
    both,
    cast,
    const_int,
    for_loop,
    guard,
    int_imm,
    seq,
    unflatten,
)

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering


def aligned_lanes(src: Operand, dst: Operand, lanes: int) -> bool:
    """Whether ``src`` and ``dst`` (global/shared tiles of one dtype and extents) can be
    moved in vectors of ``lanes`` elements: the innermost tile extent and both buffers'
    innermost dims are multiples of ``lanes`` and both tiles start at a multiple of it,
    so every vector is aligned and wholly inside or outside its buffer. Unit dims may
    differ (a ring slot ``S[stage, :, :]``)."""
    vector_scopes = (scopes.GLOBAL, *scopes.SHARED_SCOPES)
    if src.scope not in vector_scopes or dst.scope not in vector_scopes:
        return False
    if src.dtype != dst.dtype or src.squeezed != dst.squeezed or not src.squeezed:
        return False
    # The vectors run along both buffers' innermost dims (unit dims elsewhere aside).
    if src.extents[-1] != src.squeezed[-1] or dst.extents[-1] != dst.squeezed[-1]:
        return False
    if lanes < 1 or src.extents[-1] % lanes:
        return False
    analyzer = tvm.sym.Analyzer()
    for operand in (src, dst):
        size = const_int(operand.buffer.shape[-1])
        if size is None or size % lanes:
            return False
        start = analyzer.simplify(tirx.floormod(operand.region.mins[-1], lanes))
        if const_int(start) != 0:
            return False
    return True


def vector_width(src: Operand, dst: Operand, vector_bytes: int, max_lanes: int) -> int | None:
    """Lanes of a vector copy between ``src`` and ``dst``, or None when not allowed:
    both global/shared with the same dtype and extents and `aligned_lanes` for the
    widest width of at most ``vector_bytes`` bytes and ``max_lanes`` lanes (at least 2)."""
    bits = int(tvm.DataType(src.dtype).bits)
    if bits == 0 or (vector_bytes * 8) % bits:
        return None
    width = min(vector_bytes * 8 // bits, max_lanes)
    if width < 2 or not aligned_lanes(src, dst, width):
        return None
    return width


def lower_copy(kernel: KernelLowering, op: Any) -> Any:
    """The per-thread code of the ``T.copy`` ``op`` (module docstring)."""
    src, dst = Operand(op.src, kernel), Operand(op.dst, kernel)
    extents = dst.squeezed
    if extents != src.squeezed:
        raise GpuLoweringError(
            f"T.copy {src.name} -> {dst.name}: tile extents {src.squeezed} and {extents} differ"
        )

    vectorized = _vector_copy(kernel, src, dst)
    if vectorized is None:
        vectorized = _fragment_vector_copy(kernel, src, dst, extents)
    if vectorized is not None:
        return vectorized
    pairs = fragment_pair_copy(kernel, src, dst)  # tensor-core accumulators (copy_fragment)
    if pairs is not None:
        return pairs
    if src.partitioned and (
        dst.per_thread
        or (
            dst.partitioned
            and dst.layout is not None
            and src.layout is not None
            and not same_placement(src.layout, dst.layout)
        )
    ):
        return _convert_through_shared(kernel, src, dst, extents)

    def body(index: list[Any], local: Any) -> Any:
        s_index, d_index = src.expand(index), dst.expand(index)
        value = cast(src.load(s_index, local), dst.dtype)
        inside = src.inside(s_index)
        if inside is not None:
            value = tirx.if_then_else(inside, value, tirx.const(0, dst.dtype))
        return guard(dst.store(d_index, value, local), dst.inside(d_index))

    return kernel.drive([dst, src], extents, body, dst)


def _convert_through_shared(
    kernel: KernelLowering, src: Operand, dst: Operand, extents: list[int]
) -> Any:
    """A copy out of a partitioned fragment into a differently placed one (or into
    every thread's replica): the holders write a shared staging tile, a barrier,
    then the destination's threads read it, and a barrier before it is reused."""
    staging = kernel.shared_array(f"{src.name}_staging", extents, dst.dtype)

    def publish(index: list[Any], local: Any) -> Any:
        value = cast(src.load(src.expand(index), local), dst.dtype)
        return tirx.BufferStore(staging, value, list(index))

    def gather(index: list[Any], local: Any) -> Any:
        d_index = dst.expand(index)
        return guard(
            dst.store(d_index, tirx.BufferLoad(staging, list(index)), local),
            dst.inside(d_index),
        )

    return seq(
        [
            tirx.AllocBuffer(staging),
            kernel.drive([src], extents, publish, None),
            barrier(),
            kernel.drive([dst], extents, gather, dst),
            barrier(),
        ]
    )


def _vector_copy(kernel: KernelLowering, src: Operand, dst: Operand) -> Any | None:
    """A cooperative copy between global/shared tiles in 128-bit vectors, or None
    when the tiles do not allow it (see `vector_width`)."""
    traits = kernel.traits
    width = vector_width(src, dst, traits.vector_bytes, traits.max_vector_lanes)
    if width is None:
        return None
    squeezed = src.squeezed
    extents = [*squeezed[:-1], squeezed[-1] // width]

    def body(index: list[Any]) -> Any:
        element = [*index[:-1], index[-1] * width]
        s_element, d_element = src.expand(element), dst.expand(element)
        s_full = src.full_index(s_element)
        d_full = dst.full_index(d_element)
        s_vector = [*s_full[:-1], tirx.Ramp(s_full[-1], int_imm(1), width)]
        d_vector = [*d_full[:-1], tirx.Ramp(d_full[-1], int_imm(1), width)]
        value: Any = tirx.BufferLoad(src.buffer, s_vector)
        # Aligned vectors lie wholly inside or wholly outside the last dim.
        inside = src.inside(s_element)
        if inside is not None:
            value = tirx.if_then_else(inside, value, _zero_vector(src.dtype, width))
        return guard(tirx.BufferStore(dst.buffer, value, d_vector), dst.inside(d_element))

    return kernel.cooperative(extents, body)


def _fragment_vector_copy(
    kernel: KernelLowering, src: Operand, dst: Operand, extents: list[int]
) -> Any | None:
    """A copy between a partitioned fragment (default layout, slots of ``v >= 2``
    consecutive elements along the last dim) and a global/shared tile in vectors of
    one slot each, or None when alignment is not proven: the tile's last dim is the
    fragment's, and the tile's buffer's innermost dim and start are multiples of ``v``
    (so each slot is one aligned vector, wholly inside or outside the buffer), and a
    slot is at most ``traits.vector_bytes`` bytes. A dtype change converts the vector."""
    if src.partitioned == dst.partitioned:
        return None
    fragment, tile = (src, dst) if src.partitioned else (dst, src)
    layout = fragment.layout
    if (
        layout is None
        or layout.kind != PARTITIONED
        or tile.scope
        not in (
            scopes.GLOBAL,
            *scopes.SHARED_SCOPES,
        )
    ):
        return None
    v = layout.vector
    bits = max(int(tvm.DataType(src.dtype).bits), int(tvm.DataType(dst.dtype).bits))
    if v < 2 or v * bits > kernel.traits.vector_bytes * 8 or v > kernel.traits.max_vector_lanes:
        return None
    shape = list(layout.shape)
    if [e for e in shape if e != 1] != extents or not extents or shape[-1] != extents[-1]:
        return None
    if tile.extents[-1] != extents[-1]:
        return None
    size = const_int(tile.buffer.shape[-1])
    start = tvm.sym.Analyzer().simplify(tirx.floormod(tile.region.mins[-1], v))
    if size is None or size % v or const_int(start) != 0:
        return None
    slot = kernel.fresh("s")
    local = slot * v
    flat, valid = layout.element_of(kernel.tid, local)
    full = unflatten(flat, shape)
    squeezed = [i for i, e in zip(full, shape, strict=True) if e != 1]
    t_index = tile.full_index(tile.expand(squeezed))
    t_vector = [*t_index[:-1], tirx.Ramp(t_index[-1], int_imm(1), v)]
    regs = [tirx.Ramp(local, int_imm(1), v)]
    inside = tile.inside(tile.expand(squeezed))
    if fragment is src:
        value: Any = tirx.BufferLoad(src.local_buffer, regs)
        if src.dtype != dst.dtype:
            value = tirx.Cast(f"{dst.dtype}x{v}", value)
        stmt = guard(tirx.BufferStore(dst.buffer, value, t_vector), both(valid, inside))
    else:
        value = tirx.BufferLoad(src.buffer, t_vector)
        if src.dtype != dst.dtype:
            value = tirx.Cast(f"{dst.dtype}x{v}", value)
        if inside is not None:
            value = tirx.if_then_else(inside, value, tirx.Broadcast(tirx.const(0, dst.dtype), v))
        stmt = guard(tirx.BufferStore(dst.local_buffer, value, regs), valid)
    slots = layout.local_size // v
    return for_loop(slot, slots, stmt, layout.local_size <= UNROLL_LIMIT)


def _zero_vector(dtype: str, lanes: int) -> Any:
    """``lanes`` zeros of ``dtype``. TVM's CUDA codegen spells 8-bit vectors of more
    than 4 lanes only as 32-bit words, so those zeros are int32 words reinterpreted."""
    bits = int(tvm.DataType(dtype).bits)
    if bits == 8 and lanes > 4 and lanes % 4 == 0:
        words = tirx.Broadcast(tirx.const(0, "int32"), lanes // 4)
        return tirx.reinterpret(f"{dtype}x{lanes}", words)
    return tirx.Broadcast(tirx.const(0, dtype), lanes)
