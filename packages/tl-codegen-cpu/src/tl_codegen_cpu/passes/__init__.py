"""The CPU backend's passes: lowering tile programs to loops for TVM's C and LLVM code generators.

Also here: the GEMM micro-kernel, the tile-op emitters, the CPU atomics
(their C is in ``tl_codegen_cpu/include/``, `tl_codegen_cpu.c_headers`), and what the host's vector unit offers (`VectorISA`).
`CPU_PASS_REGISTRY` maps each pass name to its class; the order the backend
runs them in is ``tl_codegen_cpu.pipeline`` (docs/cpu.md).
"""

from tl_codegen_cpu.passes.atomics import (
    ATOMIC_DTYPES,
    ATOMIC_KINDS,
    atomic_function_name,
    emit_atomic_update,
    emit_tile_atomic,
)
from tl_codegen_cpu.passes.forward_copies import CpuForwardCopiesPass
from tl_codegen_cpu.passes.gemm_microkernel import (
    MICROKERNEL_STYLES,
    SUPPORTED_OPERAND_DTYPES,
    GemmOperand,
    RegisterTile,
    choose_register_tile,
    emit_gemm_microkernel,
)
from tl_codegen_cpu.passes.half_conversions import CpuCallHalfConversionsPass
from tl_codegen_cpu.passes.legalize_half_precision import LegalizeHalfPrecisionPass
from tl_codegen_cpu.passes.legalize_intrinsics import CpuLegalizeIntrinsicsPass
from tl_codegen_cpu.passes.localize_tiles import CpuLocalizeTilesPass
from tl_codegen_cpu.passes.lower_launch import CpuLowerLaunchPass
from tl_codegen_cpu.passes.lower_parallel_loops import CpuLowerParallelLoopsPass
from tl_codegen_cpu.passes.lower_tile_ops import CpuLowerTileOpsPass, lower_tile_op
from tl_codegen_cpu.passes.mark_independent_loops import (
    INDEPENDENT_LOOP_MARKER,
    MarkIndependentLoopsPass,
)
from tl_codegen_cpu.passes.mark_parallel_loops import (
    PARALLEL_FOR_MARKER,
    MarkParallelLoopsPass,
    mark_outermost_parallel_loops,
)
from tl_codegen_cpu.passes.registry import CPU_PASS_REGISTRY, create_cpu_pass
from tl_codegen_cpu.passes.reject_gpu_ops import CpuRejectGpuOpsPass
from tl_codegen_cpu.passes.split_vector_loops import CpuSplitVectorLoopsPass
from tl_codegen_cpu.passes.stack_block_locals import (
    DISABLE_LOWER_BUILTIN,
    STACK_BYTES_ATTR,
    BlockLocalsTooLargeError,
    StackBlockLocalsPass,
    stack_block_locals,
)
from tl_codegen_cpu.passes.tile_emitters import (
    REDUCE_KINDS,
    TileRegion,
    emit_tile_copy,
    emit_tile_cumsum,
    emit_tile_fill,
    emit_tile_reduce,
)
from tl_codegen_cpu.passes.vector_isa import VectorISA, host_cpu_name, vector_isa_for_target
from tl_codegen_cpu.passes.vectorize_exp import CpuVectorizeExpPass, fast_exp_f32

__all__ = [
    "ATOMIC_DTYPES",
    "ATOMIC_KINDS",
    "CPU_PASS_REGISTRY",
    "DISABLE_LOWER_BUILTIN",
    "INDEPENDENT_LOOP_MARKER",
    "MICROKERNEL_STYLES",
    "PARALLEL_FOR_MARKER",
    "REDUCE_KINDS",
    "STACK_BYTES_ATTR",
    "SUPPORTED_OPERAND_DTYPES",
    "BlockLocalsTooLargeError",
    "CpuCallHalfConversionsPass",
    "CpuForwardCopiesPass",
    "CpuLegalizeIntrinsicsPass",
    "CpuLocalizeTilesPass",
    "CpuLowerLaunchPass",
    "CpuLowerParallelLoopsPass",
    "CpuLowerTileOpsPass",
    "CpuRejectGpuOpsPass",
    "CpuSplitVectorLoopsPass",
    "CpuVectorizeExpPass",
    "GemmOperand",
    "LegalizeHalfPrecisionPass",
    "MarkIndependentLoopsPass",
    "MarkParallelLoopsPass",
    "RegisterTile",
    "StackBlockLocalsPass",
    "TileRegion",
    "VectorISA",
    "atomic_function_name",
    "choose_register_tile",
    "create_cpu_pass",
    "emit_atomic_update",
    "emit_gemm_microkernel",
    "emit_tile_atomic",
    "emit_tile_copy",
    "emit_tile_cumsum",
    "emit_tile_fill",
    "emit_tile_reduce",
    "fast_exp_f32",
    "host_cpu_name",
    "lower_tile_op",
    "mark_outermost_parallel_loops",
    "stack_block_locals",
    "vector_isa_for_target",
]
