"""`gpu_passes`: the pass list every GPU-style backend's pipeline runs."""

from __future__ import annotations

from tl_passes.gpu.async_copy import GpuFinishAsyncCopiesPass
from tl_passes.gpu.barriers import GpuInsertBarriersPass
from tl_passes.gpu.layout import GpuInferLayoutsPass
from tl_passes.gpu.lower_tile_ops import GpuLowerTileOpsPass
from tl_passes.gpu.matrix_load_addresses import GpuMatrixLoadAddressesPass
from tl_passes.gpu.pipelined_ring import GpuPipelineLoopsPass
from tl_passes.gpu.shared_conditions import GpuSharedConditionsPass
from tl_passes.gpu.shared_memory import GpuPlanSharedMemoryPass
from tl_passes.gpu.swizzle import GpuChooseSharedLayoutsPass, GpuSwizzleSharedPass
from tl_passes.gpu.traits import GpuTraits, SharedMemoryModel
from tl_passes.lower_alloc_var import LowerAllocVarPass
from tl_passes.pass_base import Pass
from tl_passes.simplify import SimplifyPass
from tl_passes.thread_loops import GpuBindThreadLoopsPass


def gpu_passes(traits: GpuTraits) -> list[Pass]:
    """The GPU lowering passes for a backend with ``traits``, in order.

    ``gpu-bind-thread-loops`` (``T.thread_binding`` loops on a launched tag are that
    thread index), ``lower-alloc-var`` (scalars become thread-local arrays), ``gpu-pipeline-loops``
    (``T.Pipelined`` as async-copy rings where ``traits.async_copy`` allows, in order
    elsewhere), then
    ``gpu-infer-layouts``, ``gpu-choose-shared-layouts`` (swizzled shared tiles),
    ``gpu-insert-barriers``, ``gpu-lower-tile-ops`` (with ``traits``),
    ``gpu-swizzle-shared`` (their indices remapped), ``gpu-plan-shared-memory`` (static tiles when
    ``traits.shared_memory`` is `SharedMemoryModel.STATIC`), ``simplify`` and
    ``gpu-finish-async-copies`` (proven zero-fills become plain async copies) and
    ``gpu-matrix-load-addresses`` (matrix-load row addresses as access pointers) and
    ``gpu-shared-conditions`` (an ``if`` condition reading shared memory is stored into a
    local first: TVM's barrier planner refuses shared loads in conditions).

    Raises:
        TypeError: ``traits`` is not a `GpuTraits`.
    """
    if not isinstance(traits, GpuTraits):
        raise TypeError(f"gpu_passes: traits must be a GpuTraits, got {type(traits).__name__}")
    return [
        GpuBindThreadLoopsPass(),
        LowerAllocVarPass(),
        GpuPipelineLoopsPass(traits),
        GpuInferLayoutsPass(traits),
        GpuChooseSharedLayoutsPass(traits),
        GpuInsertBarriersPass(),
        GpuLowerTileOpsPass(traits),
        GpuSwizzleSharedPass(),
        GpuPlanSharedMemoryPass(static=traits.shared_memory is SharedMemoryModel.STATIC),
        SimplifyPass(),
        GpuFinishAsyncCopiesPass(traits),
        GpuMatrixLoadAddressesPass(traits),
        GpuSharedConditionsPass(),
    ]
