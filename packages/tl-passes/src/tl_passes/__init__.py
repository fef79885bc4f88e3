"""tl_passes: target-neutral passes, the pass pipeline framework and the CPU GEMM micro-kernel."""

from tl_passes.atomics import (
    ATOMIC_DTYPES,
    ATOMIC_KINDS,
    C_ATOMICS_PRELUDE,
    atomic_function_name,
    atomics_c_source,
    emit_atomic_update,
    emit_tile_atomic,
)
from tl_passes.cpu_forward_copies import CpuForwardCopiesPass
from tl_passes.cpu_legalize_intrinsics import CpuLegalizeIntrinsicsPass
from tl_passes.cpu_localize_tiles import CpuLocalizeTilesPass
from tl_passes.cpu_lower_launch import CpuLowerLaunchPass
from tl_passes.cpu_lower_parallel_loops import CpuLowerParallelLoopsPass
from tl_passes.cpu_lower_tile_ops import CpuLowerTileOpsPass, lower_tile_op
from tl_passes.cpu_reject_gpu_ops import CpuRejectGpuOpsPass
from tl_passes.cpu_split_vector_loops import CpuSplitVectorLoopsPass
from tl_passes.cpu_vectorize_exp import CpuVectorizeExpPass, fast_exp_f32
from tl_passes.gemm_microkernel import (
    C_MICROKERNEL_PRELUDE,
    MICROKERNEL_STYLES,
    SUPPORTED_OPERAND_DTYPES,
    GemmOperand,
    RegisterTile,
    choose_register_tile,
    emit_gemm_microkernel,
)
from tl_passes.gpu_insert_barriers import GpuInsertBarriersPass
from tl_passes.gpu_layout import FragmentLayout, GpuInferLayoutsPass, infer_fragment_layouts
from tl_passes.gpu_lower_tile_ops import GpuLoweringError, GpuLowerTileOpsPass
from tl_passes.gpu_shared_memory import GpuPlanSharedMemoryPass
from tl_passes.legalize_half_precision import LegalizeHalfPrecisionPass
from tl_passes.lower_alloc_var import LowerAllocVarPass
from tl_passes.lower_pipelined_loops import LowerPipelinedLoopsPass
from tl_passes.mark_parallel_loops import (
    PARALLEL_FOR_MARKER,
    MarkParallelLoopsPass,
    mark_outermost_parallel_loops,
)
from tl_passes.pass_base import (
    Pass,
    PassContext,
    PrimFuncPass,
    is_kebab_case,
    replace_functions,
)
from tl_passes.pipeline import (
    DUMP_IR_ENV,
    PassCallback,
    PassTiming,
    Pipeline,
    PipelineRun,
    module_text,
)
from tl_passes.registry import PASS_REGISTRY, available_passes, create_pass, get_pass_class
from tl_passes.remove_no_op import RemoveNoOpPass
from tl_passes.simplify import SimplifyPass
from tl_passes.stack_block_locals import (
    DISABLE_LOWER_BUILTIN,
    BlockLocalsTooLargeError,
    StackBlockLocalsPass,
    stack_block_locals,
)
from tl_passes.tile_emitters import (
    REDUCE_KINDS,
    TileRegion,
    emit_tile_copy,
    emit_tile_cumsum,
    emit_tile_fill,
    emit_tile_reduce,
)
from tl_passes.vector_isa import VectorISA, host_cpu_name, vector_isa_for_target

__all__ = [
    "ATOMIC_DTYPES",
    "ATOMIC_KINDS",
    "C_ATOMICS_PRELUDE",
    "C_MICROKERNEL_PRELUDE",
    "DISABLE_LOWER_BUILTIN",
    "DUMP_IR_ENV",
    "MICROKERNEL_STYLES",
    "PARALLEL_FOR_MARKER",
    "PASS_REGISTRY",
    "REDUCE_KINDS",
    "SUPPORTED_OPERAND_DTYPES",
    "BlockLocalsTooLargeError",
    "CpuForwardCopiesPass",
    "CpuLegalizeIntrinsicsPass",
    "CpuLocalizeTilesPass",
    "CpuLowerLaunchPass",
    "CpuLowerParallelLoopsPass",
    "CpuLowerTileOpsPass",
    "CpuRejectGpuOpsPass",
    "CpuSplitVectorLoopsPass",
    "CpuVectorizeExpPass",
    "FragmentLayout",
    "GemmOperand",
    "GpuInferLayoutsPass",
    "GpuInsertBarriersPass",
    "GpuLowerTileOpsPass",
    "GpuLoweringError",
    "GpuPlanSharedMemoryPass",
    "LegalizeHalfPrecisionPass",
    "LowerAllocVarPass",
    "LowerPipelinedLoopsPass",
    "MarkParallelLoopsPass",
    "Pass",
    "PassCallback",
    "PassContext",
    "PassTiming",
    "Pipeline",
    "PipelineRun",
    "PrimFuncPass",
    "RegisterTile",
    "RemoveNoOpPass",
    "SimplifyPass",
    "StackBlockLocalsPass",
    "TileRegion",
    "VectorISA",
    "atomic_function_name",
    "atomics_c_source",
    "available_passes",
    "choose_register_tile",
    "create_pass",
    "emit_atomic_update",
    "emit_gemm_microkernel",
    "emit_tile_atomic",
    "emit_tile_copy",
    "emit_tile_cumsum",
    "emit_tile_fill",
    "emit_tile_reduce",
    "fast_exp_f32",
    "get_pass_class",
    "host_cpu_name",
    "infer_fragment_layouts",
    "is_kebab_case",
    "lower_tile_op",
    "mark_outermost_parallel_loops",
    "module_text",
    "replace_functions",
    "stack_block_locals",
    "vector_isa_for_target",
]
