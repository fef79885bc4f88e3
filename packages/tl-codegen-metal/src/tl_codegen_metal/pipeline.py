"""The lowering pipeline for 'metal': the shared GPU passes, with static threadgroup memory."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes import SimplifyPass
from tl_passes.gpu_insert_barriers import GpuInsertBarriersPass
from tl_passes.gpu_layout import GpuInferLayoutsPass
from tl_passes.gpu_lower_tile_ops import GpuLowerTileOpsPass
from tl_passes.gpu_shared_memory import GpuPlanSharedMemoryPass
from tl_passes.lower_alloc_var import LowerAllocVarPass
from tl_passes.lower_pipelined_loops import LowerPipelinedLoopsPass

#: TVM's Metal codegen has no dynamic threadgroup memory: shared tiles become
#: static arrays. Reductions combine through threadgroup memory; atomics are
#: not lowered on Metal (a clear error).
PIPELINE = pipeline_from_passes(
    "metal",
    [
        LowerAllocVarPass(),
        LowerPipelinedLoopsPass(),
        GpuInferLayoutsPass(),
        GpuInsertBarriersPass(),
        GpuLowerTileOpsPass(),
        GpuPlanSharedMemoryPass(static=True),
        SimplifyPass(),
    ],
)
