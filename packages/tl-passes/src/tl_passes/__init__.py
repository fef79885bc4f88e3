"""tl_passes: the pass framework (`Pass`, `PrimFuncPass`, `Pipeline`) and the passes every target uses.

Pass registries (pass name -> class, `tl_passes.registry`) serve tests and tools
that build passes by name; no pipeline uses them, so they are not exported here.

No target-specific pass lives here: each backend package owns its passes
(the CPU ones are in ``tl_codegen_cpu.passes``). Lowering shared by the
GPU-style backends is in ``tl_passes.gpu``, parameterized by each backend's traits.
"""

from tl_passes.gpu import (
    FragmentLayout,
    GpuInferLayoutsPass,
    GpuInsertBarriersPass,
    GpuLoweringError,
    GpuLowerTileOpsPass,
    GpuPlanSharedMemoryPass,
    GpuTraits,
    gpu_passes,
    infer_fragment_layouts,
)
from tl_passes.lower_alloc_var import LowerAllocVarPass
from tl_passes.lower_pipelined_loops import LowerPipelinedLoopsPass
from tl_passes.pass_base import (
    Pass,
    PassContext,
    PrimFuncPass,
    is_kebab_case,
    replace_functions,
)
from tl_passes.pipeline import (
    DUMP_IR_ENV,
    IRDumpError,
    PassCallback,
    PassTiming,
    Pipeline,
    PipelineRun,
    PipelineStage,
    dump_directory,
    module_text,
    pipeline_from_passes,
)
from tl_passes.remove_no_op import RemoveNoOpPass
from tl_passes.simplify import SimplifyPass

__all__ = [
    "DUMP_IR_ENV",
    "FragmentLayout",
    "GpuInferLayoutsPass",
    "GpuInsertBarriersPass",
    "GpuLowerTileOpsPass",
    "GpuLoweringError",
    "GpuPlanSharedMemoryPass",
    "GpuTraits",
    "IRDumpError",
    "LowerAllocVarPass",
    "LowerPipelinedLoopsPass",
    "Pass",
    "PassCallback",
    "PassContext",
    "PassTiming",
    "Pipeline",
    "PipelineRun",
    "PipelineStage",
    "PrimFuncPass",
    "RemoveNoOpPass",
    "SimplifyPass",
    "dump_directory",
    "gpu_passes",
    "infer_fragment_layouts",
    "is_kebab_case",
    "module_text",
    "pipeline_from_passes",
    "replace_functions",
]
