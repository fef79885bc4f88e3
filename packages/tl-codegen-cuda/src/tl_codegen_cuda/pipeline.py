"""The lowering pipeline for 'cuda': the shared GPU passes of tl_passes, in order."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes import SimplifyPass
from tl_passes.gpu_insert_barriers import GpuInsertBarriersPass
from tl_passes.gpu_layout import GpuInferLayoutsPass
from tl_passes.gpu_lower_tile_ops import GpuLowerTileOpsPass
from tl_passes.gpu_shared_memory import GpuPlanSharedMemoryPass
from tl_passes.lower_alloc_var import LowerAllocVarPass
from tl_passes.lower_pipelined_loops import LowerPipelinedLoopsPass

#: scalars to thread-local arrays, pipelined loops in order (the target-neutral passes
#: the CPU uses too) -> infer fragment layouts -> barriers on the tile program -> per-thread code
#: (warp-shuffle reductions, CUDA atomics) -> dynamic shared memory size -> simplify.
PIPELINE = pipeline_from_passes(
    "cuda",
    [
        LowerAllocVarPass(),
        LowerPipelinedLoopsPass(),
        GpuInferLayoutsPass(),
        GpuInsertBarriersPass(),
        GpuLowerTileOpsPass(),
        GpuPlanSharedMemoryPass(),
        SimplifyPass(),
    ],
)
