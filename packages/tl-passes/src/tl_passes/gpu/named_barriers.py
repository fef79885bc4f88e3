"""Named barriers (``T.sync_threads(id, count)``) as the target spells them.

Runs inside `gpu-lower-tile-ops`, after `gpu-insert-barriers` has used each named
barrier as a point where shared-memory accesses are ordered. On a target whose
`GpuTraits.named_barrier` names a device function, the barrier is checked and stays
``tvm_storage_sync("shared", id, count)``: TVM's own barrier planning, which runs
after these passes, must still see it as a barrier, and the backend's codegen then
spells it as the call ``name(id, count)`` (``bar.sync id, count`` on CUDA). A target
without one can
still lower a named barrier that all of the block's threads take part in (its
count is the block's size: every thread reaches it, so it is the whole block's
barrier); any other is refused, because no barrier of such a target waits for
part of a block.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_ir.barriers import named_barrier
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.traits import GpuTraits


def lower_named_barriers(body: Any, traits: GpuTraits, block_threads: int, warp_size: int) -> Any:
    """``body`` with every named barrier lowered for ``traits`` (module docstring).

    Args:
        body: a kernel body.
        traits: the target's traits (`GpuTraits.named_barrier`).
        block_threads: the kernel's threads per block.
        warp_size: threads per warp on the target; a count must be a multiple of it
            (the hardware counts arrivals per warp).

    Raises:
        GpuLoweringError: a count above the block's size or not a whole number of
            warps; a partial named barrier on a target that has none.
    """

    refusals: list[str] = []

    def rewrite(stmt: Any) -> Any:
        found = named_barrier(stmt)
        if found is None:
            return stmt
        try:
            return _lowered(stmt, found, traits, block_threads, warp_size)
        except GpuLoweringError as exc:  # raised below: not through the FFI callback
            refusals.append(str(exc))
            return stmt

    lowered = tvm_ffi.structural_map(body, (tirx.Evaluate, rewrite), order="post")
    if refusals:
        raise GpuLoweringError(refusals[0])
    return lowered


def _lowered(
    stmt: Any, found: tuple[int, int], traits: GpuTraits, block_threads: int, warp_size: int
) -> Any:
    """The lowered barrier (see `lower_named_barriers`)."""
    ident, count = found
    where = f"T.sync_threads({ident}, {count})"
    if count > block_threads:
        raise GpuLoweringError(
            f"{where}: arrive_count {count} exceeds the block's {block_threads} threads "
            "(the barrier would never open)"
        )
    if count % warp_size:
        raise GpuLoweringError(
            f"{where}: arrive_count must be a multiple of the warp size {warp_size} "
            f"on target '{traits.name}' (arrivals are counted per warp), got {count}"
        )
    if traits.named_barrier is not None:
        return stmt
    if count == block_threads:
        return tirx.Evaluate(
            tirx.call_intrin("int32", "tirx.tvm_storage_sync", tvm.ir.StringImm(scopes.SHARED))
        )
    raise GpuLoweringError(
        f"{where}: target '{traits.name}' has no barrier among part of a block; "
        f"only a named barrier of all {block_threads} threads is supported there "
        "(or use T.sync_threads() where every thread reaches it)"
    )
