"""The CPU backend's passes: lowering tile programs to loops for TVM's C and LLVM code generators.

One module per pass, every pass a ``Cpu...Pass`` named ``cpu-...``. What they
build with (emitters, the GEMM micro-kernel, atomics, the vector ISA, shared
analyses) is in ``tl_codegen_cpu.lowering``; the C they call is in
``tl_codegen_cpu/include/``.
`CPU_PASS_REGISTRY` maps each pass name to its class; the order the backend
runs them in is ``tl_codegen_cpu.pipeline`` (docs/cpu.md).
"""

from tl_codegen_cpu.passes.exact_float_constants import (
    EXACT_FLOAT_PREFIX,
    CpuExactFloatConstantsPass,
)
from tl_codegen_cpu.passes.float16_bits import CpuFloat16BitsPass
from tl_codegen_cpu.passes.forward_copies import CpuForwardCopiesPass
from tl_codegen_cpu.passes.half_conversions import CpuCallHalfConversionsPass
from tl_codegen_cpu.passes.legalize_float8 import CpuLegalizeFloat8Pass
from tl_codegen_cpu.passes.legalize_half_precision import CpuLegalizeHalfPrecisionPass
from tl_codegen_cpu.passes.legalize_intrinsics import CpuLegalizeIntrinsicsPass
from tl_codegen_cpu.passes.localize_tiles import CpuLocalizeTilesPass
from tl_codegen_cpu.passes.lower_launch import CpuLowerLaunchPass
from tl_codegen_cpu.passes.lower_parallel_loops import CpuLowerParallelLoopsPass
from tl_codegen_cpu.passes.lower_tile_ops import CpuLowerTileOpsPass, lower_tile_op
from tl_codegen_cpu.passes.lower_warp_shuffles import CpuLowerWarpShufflesPass
from tl_codegen_cpu.passes.mark_independent_loops import (
    INDEPENDENT_LOOP_MARKER,
    CpuMarkIndependentLoopsPass,
)
from tl_codegen_cpu.passes.mark_parallel_loops import (
    PARALLEL_FOR_MARKER,
    CpuMarkParallelLoopsPass,
    CpuSerializeNestedParallelLoopsPass,
    mark_outermost_parallel_loops,
)
from tl_codegen_cpu.passes.registry import CPU_PASS_REGISTRY, create_cpu_pass
from tl_codegen_cpu.passes.reject_gpu_ops import CpuRejectGpuOpsPass
from tl_codegen_cpu.passes.split_vector_loops import CpuSplitVectorLoopsPass
from tl_codegen_cpu.passes.stack_block_locals import (
    DISABLE_LOWER_BUILTIN,
    STACK_BYTES_ATTR,
    BlockLocalsTooLargeError,
    CpuStackBlockLocalsPass,
    stack_block_locals,
)
from tl_codegen_cpu.passes.vectorize_exp import CpuVectorizeExpPass, fast_exp_f32

__all__ = [
    "CPU_PASS_REGISTRY",
    "DISABLE_LOWER_BUILTIN",
    "EXACT_FLOAT_PREFIX",
    "INDEPENDENT_LOOP_MARKER",
    "PARALLEL_FOR_MARKER",
    "STACK_BYTES_ATTR",
    "BlockLocalsTooLargeError",
    "CpuCallHalfConversionsPass",
    "CpuExactFloatConstantsPass",
    "CpuFloat16BitsPass",
    "CpuForwardCopiesPass",
    "CpuLegalizeFloat8Pass",
    "CpuLegalizeHalfPrecisionPass",
    "CpuLegalizeIntrinsicsPass",
    "CpuLocalizeTilesPass",
    "CpuLowerLaunchPass",
    "CpuLowerParallelLoopsPass",
    "CpuLowerTileOpsPass",
    "CpuLowerWarpShufflesPass",
    "CpuMarkIndependentLoopsPass",
    "CpuMarkParallelLoopsPass",
    "CpuRejectGpuOpsPass",
    "CpuSerializeNestedParallelLoopsPass",
    "CpuSplitVectorLoopsPass",
    "CpuStackBlockLocalsPass",
    "CpuVectorizeExpPass",
    "create_cpu_pass",
    "fast_exp_f32",
    "lower_tile_op",
    "mark_outermost_parallel_loops",
    "stack_block_locals",
]
