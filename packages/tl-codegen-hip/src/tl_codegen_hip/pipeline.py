"""The lowering pipeline for 'rocm': the shared GPU passes of tl_passes, in order."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes import SimplifyPass
from tl_passes.gpu_insert_barriers import GpuInsertBarriersPass
from tl_passes.gpu_layout import GpuInferLayoutsPass
from tl_passes.gpu_lower_tile_ops import GpuLowerTileOpsPass
from tl_passes.gpu_shared_memory import GpuPlanSharedMemoryPass
from tl_passes.lower_alloc_var import LowerAllocVarPass
from tl_passes.lower_pipelined_loops import LowerPipelinedLoopsPass

#: Same passes as CUDA; reductions shuffle across the target's wavefront
#: (``thread_warp_size``, 64 on gfx9), atomics use LLVM's (add only).
PIPELINE = pipeline_from_passes(
    "rocm",
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
