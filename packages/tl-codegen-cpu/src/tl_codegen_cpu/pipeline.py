"""The lowering pipelines of the CPU backend: an explicit, ordered pass list per target kind.

Both kinds lower the same way (docs/cpu.md); they differ in the GEMM
micro-kernel style (``c``: GCC vector-extension calls, since TVM's C printer
cannot print vector types; ``llvm``: vectorized TIR loops) and in where
block-local arrays live (``c``: on the stack, `stack-block-locals`, because a
heap workspace cannot be allocated inside an OpenMP region; ``llvm``: TVM's
workspace allocator, filled in by tl-runtime).
"""

from __future__ import annotations

from tl_backend_api import StagedPipeline, pipeline_from_passes
from tl_codegen_cpu.passes import (
    CpuForwardCopiesPass,
    CpuLegalizeIntrinsicsPass,
    CpuLocalizeTilesPass,
    CpuLowerLaunchPass,
    CpuLowerParallelLoopsPass,
    CpuLowerTileOpsPass,
    CpuRejectGpuOpsPass,
    CpuSplitVectorLoopsPass,
    CpuVectorizeExpPass,
    LegalizeHalfPrecisionPass,
    StackBlockLocalsPass,
)
from tl_passes import (
    LowerAllocVarPass,
    LowerPipelinedLoopsPass,
    Pass,
    RemoveNoOpPass,
    SimplifyPass,
)


def _common(gemm_style: str, split_vector_loops: bool) -> list[Pass]:
    # TVM's C printer cannot print vectors (vectorization is off on c), so only llvm
    # needs long vectorized loops cut into register-wide chunks.
    split: list[Pass] = [CpuSplitVectorLoopsPass()] if split_vector_loops else []
    return [
        CpuRejectGpuOpsPass(),
        LowerPipelinedLoopsPass(),
        LowerAllocVarPass(),
        CpuLowerLaunchPass(),
        CpuForwardCopiesPass(),
        CpuLowerTileOpsPass(gemm_style=gemm_style),
        CpuLowerParallelLoopsPass(),
        *split,
        CpuLocalizeTilesPass(),
        LegalizeHalfPrecisionPass(),
        CpuVectorizeExpPass(),
        CpuLegalizeIntrinsicsPass(),
        SimplifyPass(),
        RemoveNoOpPass(),
    ]


#: Target ``c``: ends with block-local arrays on the stack (the C toolchain then
#: marks the grid loop for ``#pragma omp parallel for``).
C_PASSES: tuple[Pass, ...] = (
    *_common("c-vector-extension", split_vector_loops=False),
    StackBlockLocalsPass(),
)

#: Target ``llvm``.
LLVM_PASSES: tuple[Pass, ...] = tuple(_common("tir", split_vector_loops=True))

C_PIPELINE: StagedPipeline = pipeline_from_passes("cpu-c", C_PASSES)
LLVM_PIPELINE: StagedPipeline = pipeline_from_passes("cpu-llvm", LLVM_PASSES)

#: Kind -> pipeline.
PIPELINES: dict[str, StagedPipeline] = {"c": C_PIPELINE, "llvm": LLVM_PIPELINE}
