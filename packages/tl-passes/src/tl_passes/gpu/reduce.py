"""``T.reduce_*`` on GPU targets.

Each thread folds its own source elements into per-output partials, then the
block all-reduces every partial (a row reduction of a tensor-core accumulator
into its rows stays in the threads that hold them: `reduce_rows`): with warp shuffles where the backend's
`GpuTraits` has them (a ``shfl_xor`` butterfly in each warp, then one shared
table across warps), otherwise through a shared table of at most
`REDUCE_TABLE_BYTES` per round. The result is on every thread. A source
every thread holds whole is reduced sequentially, without combining.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tvm
from tvm import tirx

from tl_ir.reduce_identity import max_identity, min_identity
from tl_passes.gpu.barriers import barrier
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.operand import Operand
from tl_passes.gpu.reduce_rows import lower_row_reduce
from tl_passes.gpu.tir_build import (
    UNROLL_LIMIT,
    cast,
    const_int,
    for_loop,
    guard,
    int_imm,
    seq,
)

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering

#: Bytes of the shared table the shared-memory reduction uses per round.
REDUCE_TABLE_BYTES = 16384


def _reduce_parts(kind: str, dtype: str) -> tuple[Any, Callable[[Any, Any], Any]]:
    if kind in ("sum", "abssum"):
        return tirx.const(0, dtype), lambda x, y: x + y
    if kind == "max":
        return max_identity(dtype), tirx.max
    if kind == "absmax":
        return tirx.min_value(dtype), tirx.max
    if kind == "min":
        return min_identity(dtype), tirx.min
    raise GpuLoweringError(f"T.reduce: unknown kind {kind!r}")


def lower_reduce(kernel: KernelLowering, op: Any) -> Any:
    """The per-thread code of the ``T.reduce_*`` ``op`` (module docstring)."""
    src, dst = Operand(op.src, kernel), Operand(op.dst, kernel)
    dim = op.dim
    acc_dtype = dst.dtype
    identity, combine = _reduce_parts(op.kind, acc_dtype)
    rows = lower_row_reduce(kernel, op, src, dst, identity, combine)
    if rows is not None:
        return rows
    if dst.partitioned:
        raise GpuLoweringError(f"T.reduce: destination {dst.name} must not be partitioned")
    out_extents = [e for d, e in enumerate(src.extents) if d != dim]
    out_count = math.prod(out_extents)
    absolute = op.kind in ("abssum", "absmax")

    dst_index = _dst_mapping(src, dst, dim, out_extents)

    def element(value: Any) -> Any:
        value = cast(value, acc_dtype)
        return tirx.abs(value) if absolute else value

    def finish(out_index: list[Any], value: Any) -> Any:
        d_index = dst_index(out_index)
        if not op.clear:
            value = combine(dst.load(d_index), value)
        return guard(dst.store(d_index, value), dst.inside(d_index))

    if src.per_thread:
        # Every thread holds the whole source: reduce sequentially, no combining.
        total = kernel.local_array("red_acc", [1], acc_dtype)
        rv = kernel.fresh("r")

        def per_out(out_index: list[Any]) -> Any:
            s_index = [*out_index[:dim], rv, *out_index[dim:]]
            fold = tirx.BufferStore(
                total, combine(tirx.BufferLoad(total, [0]), element(src.load(s_index))), [0]
            )
            return seq(
                [
                    tirx.BufferStore(total, identity, [0]),
                    for_loop(rv, src.extents[dim], fold),
                    finish(out_index, tirx.BufferLoad(total, [0])),
                ]
            )

        body = _writer_loop(kernel, dst, out_extents, per_out)
        return seq([tirx.AllocBuffer(total), body])

    partial = kernel.local_array("red_part", [out_count], acc_dtype)
    init_var = kernel.fresh("o")
    stmts: list[Any] = [
        tirx.AllocBuffer(partial),
        for_loop(
            init_var,
            out_count,
            tirx.BufferStore(partial, identity, [init_var]),
            out_count <= UNROLL_LIMIT,
        ),
    ]

    def out_flat(full_index: list[Any]) -> Any:
        rest = [x for d, x in enumerate(full_index) if d != dim]
        flat: Any = int_imm(0)
        for x, extent in zip(rest, out_extents, strict=True):
            flat = flat * extent + x if const_int(flat) != 0 else x
        return flat

    def fold(index: list[Any], local: Any) -> Any:
        s_index = src.expand(index)
        slot = out_flat(s_index)
        value = element(src.load(s_index, local))
        store = tirx.BufferStore(partial, combine(tirx.BufferLoad(partial, [slot]), value), [slot])
        return guard(store, src.inside(s_index))

    stmts.append(kernel.drive([src], src.squeezed, fold, None))
    stmts.extend(_combine_across_threads(kernel, partial, out_count, acc_dtype, combine))

    def write(out_index: list[Any]) -> Any:
        flat = out_flat([*out_index[:dim], int_imm(0), *out_index[dim:]])
        return finish(out_index, tirx.BufferLoad(partial, [flat]))

    stmts.append(_writer_loop(kernel, dst, out_extents, write))
    return seq(stmts)


def _dst_mapping(
    src: Operand, dst: Operand, dim: int, out_extents: list[int]
) -> Callable[[list[Any]], list[Any]]:
    """The destination index of an output index (over ``out_extents``, the source's
    extents without ``dim``): the non-unit output dims in order are the destination's
    non-unit dims, its unit dims are 0. Besides ``dst``'s own shape (with or without
    ``dim`` kept as a unit dim) this covers a source region with extra leading unit dims:
    the stage dim of a tile in a ``T.Pipelined`` ring (`gpu.pipelined_ring`).

    Raises:
        GpuLoweringError: the non-unit extents of the output and of ``dst`` differ.
    """
    kept = [d for d, e in enumerate(out_extents) if e != 1]
    wanted = [e for e in dst.extents if e != 1]
    if [out_extents[d] for d in kept] != wanted:
        raise GpuLoweringError(
            f"T.reduce: reducing {src.name} {src.extents} along dim {dim} gives "
            f"{out_extents}, which does not fit the destination {dst.name} {dst.extents}"
        )

    def mapping(out_index: list[Any]) -> list[Any]:
        picked = iter(out_index[d] for d in kept)
        return [int_imm(0) if e == 1 else next(picked) for e in dst.extents]

    return mapping


def _writer_loop(
    kernel: KernelLowering, dst: Operand, extents: list[int], body: Callable[[list[Any]], Any]
) -> Any:
    if dst.per_thread:
        return kernel.every(extents, body)
    return kernel.cooperative(extents, body)


def _combine_across_threads(
    kernel: KernelLowering, partial: Any, count: int, dtype: str, combine: Callable[[Any, Any], Any]
) -> list[Any]:
    """All-reduce ``partial[0:count]`` over the block; every thread gets the result."""
    t = kernel.num_threads
    if t == 1:
        return []
    warp = kernel.warp_size
    if kernel.traits.warp_shuffle is not None and warp > 1 and t % warp == 0:
        return _combine_with_shuffles(kernel, partial, count, dtype, combine, warp)
    return _combine_in_shared(kernel, partial, count, dtype, combine)


def _combine_with_shuffles(
    kernel: KernelLowering,
    partial: Any,
    count: int,
    dtype: str,
    combine: Callable[[Any, Any], Any],
    warp: int,
) -> list[Any]:
    t = kernel.num_threads
    shuffle = kernel.traits.warp_shuffle
    assert shuffle is not None, "the caller checks that the target has warp shuffles"
    lane = kernel.tid % warp
    warps = t // warp
    d = kernel.fresh("d")
    value: Any = tirx.BufferLoad(partial, [d])
    steps = []
    offset = warp // 2
    while offset >= 1:
        current = tirx.BufferLoad(partial, [d])
        shuffled = tirx.call_intrin(
            dtype,
            shuffle.intrinsic,
            tirx.const(shuffle.mask(warp), "uint32"),
            current,
            tirx.bitwise_xor(lane, int_imm(offset)),
            int_imm(warp),
            int_imm(warp),
        )
        steps.append(tirx.BufferStore(partial, combine(current, shuffled), [d]))
        offset //= 2
    del value
    stmts: list[Any] = [for_loop(d, count, seq(steps), count <= UNROLL_LIMIT)]
    if warps == 1:
        return stmts
    table = kernel.shared_array("red_warps", [warps, count], dtype)
    d2, w = kernel.fresh("d"), kernel.fresh("w")
    warp_id = kernel.tid // warp
    publish = guard(
        for_loop(
            d2,
            count,
            tirx.BufferStore(table, tirx.BufferLoad(partial, [d2]), [warp_id, d2]),
        ),
        lane == 0,
    )
    d3 = kernel.fresh("d")
    gather = for_loop(
        d3,
        count,
        seq(
            [
                tirx.BufferStore(partial, tirx.BufferLoad(table, [int_imm(0), d3]), [d3]),
                for_loop(
                    w,
                    warps - 1,
                    tirx.BufferStore(
                        partial,
                        combine(
                            tirx.BufferLoad(partial, [d3]),
                            tirx.BufferLoad(table, [w + 1, d3]),
                        ),
                        [d3],
                    ),
                ),
            ]
        ),
    )
    return [tirx.AllocBuffer(table), *stmts, publish, barrier(), gather, barrier()]


def _fold_in_every_thread(
    kernel: KernelLowering,
    partial: Any,
    count: int,
    dtype: str,
    combine: Callable[[Any, Any], Any],
    table: Any,
) -> list[Any]:
    """`_combine_in_shared` one value per round (its table has one row): each thread
    publishes its partial, then every thread folds the row itself (broadcast reads, no
    branch). Folded by thread 0 into a shared result under ``tx < 1``, TVM's barrier
    planner took the fold's accesses for every thread's and refused the kernel ("Cannot
    insert syncs inside condition": a block whose size is not a multiple of the warp,
    threads=48 or 16, reducing one row)."""
    t = kernel.num_threads
    r, s = kernel.fresh("round"), kernel.fresh("s")
    acc = kernel.local_array("red_acc", [1], dtype)
    zero = [int_imm(0)]
    row = int_imm(0)
    publish = tirx.BufferStore(table, tirx.BufferLoad(partial, [r]), [row, kernel.tid])
    step = combine(tirx.BufferLoad(acc, zero), tirx.BufferLoad(table, [row, s + 1]))
    fold = seq(
        [
            tirx.BufferStore(acc, tirx.BufferLoad(table, [row, int_imm(0)]), zero),
            for_loop(s, t - 1, tirx.BufferStore(acc, step, zero)),
            tirx.BufferStore(partial, tirx.BufferLoad(acc, zero), [r]),
        ]
    )
    body = seq([publish, barrier(), fold, barrier()])
    return [tirx.AllocBuffer(table), tirx.AllocBuffer(acc), for_loop(r, count, body)]


def _combine_in_shared(
    kernel: KernelLowering, partial: Any, count: int, dtype: str, combine: Callable[[Any, Any], Any]
) -> list[Any]:
    t = kernel.num_threads
    bytes_per = max(1, tvm.DataType(dtype).bits // 8)
    chunk = max(1, min(count, t, REDUCE_TABLE_BYTES // (t * bytes_per)))
    table = kernel.shared_array("red_table", [chunk, t], dtype)
    if chunk == 1:
        return _fold_in_every_thread(kernel, partial, count, dtype, combine, table)
    result = kernel.shared_array("red_result", [chunk], dtype)
    rounds = -(-count // chunk)
    r, c1, c2, s = kernel.fresh("round"), kernel.fresh("c"), kernel.fresh("c"), kernel.fresh("s")
    out1 = r * chunk + c1
    publish = for_loop(
        c1,
        chunk,
        guard(
            tirx.BufferStore(table, tirx.BufferLoad(partial, [out1]), [c1, kernel.tid]),
            None if count % chunk == 0 else out1 < count,
        ),
    )
    row = kernel.tid
    fold = guard(
        seq(
            [
                tirx.BufferStore(result, tirx.BufferLoad(table, [row, int_imm(0)]), [row]),
                for_loop(
                    s,
                    t - 1,
                    tirx.BufferStore(
                        result,
                        combine(
                            tirx.BufferLoad(result, [row]),
                            tirx.BufferLoad(table, [row, s + 1]),
                        ),
                        [row],
                    ),
                ),
            ]
        ),
        row < chunk,
    )
    out2 = r * chunk + c2
    gather = for_loop(
        c2,
        chunk,
        guard(
            tirx.BufferStore(partial, tirx.BufferLoad(result, [c2]), [out2]),
            None if count % chunk == 0 else out2 < count,
        ),
    )
    body = seq([publish, barrier(), fold, barrier(), gather, barrier()])
    return [tirx.AllocBuffer(table), tirx.AllocBuffer(result), for_loop(r, rounds, body)]
