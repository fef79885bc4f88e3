"""The lowering pipelines of the CPU backend: an explicit, ordered pass list per target kind.

Both kinds lower the same way (docs/cpu.md); they differ in the GEMM
micro-kernel style (``c``: GCC vector-extension calls, since TVM's C printer
cannot print vector types; ``llvm``: vectorized TIR loops) and in where
block-local arrays live (``c``: on the stack, `cpu-stack-block-locals`, because a
heap workspace cannot be allocated inside an OpenMP region; ``llvm``: TVM's
workspace allocator, filled in by tl-runtime). The ``c`` pipeline ends with the
stages that prepare the module for TVM's C printer (`C_PREPARATION_PASSES`),
so they show in ``TL_DUMP_IR`` like every other stage.
"""

from __future__ import annotations

from tvm import IRModule

from tl_backend_api import Pipeline, pipeline_from_passes
from tl_codegen_cpu.passes import (
    CpuCallHalfConversionsPass,
    CpuExactFloatConstantsPass,
    CpuFloat16BitsPass,
    CpuForwardCopiesPass,
    CpuLegalizeFloat8Pass,
    CpuLegalizeHalfPrecisionPass,
    CpuLegalizeIntrinsicsPass,
    CpuLocalizeTilesPass,
    CpuLowerLaunchPass,
    CpuLowerParallelLoopsPass,
    CpuLowerTileOpsPass,
    CpuLowerWarpShufflesPass,
    CpuMarkIndependentLoopsPass,
    CpuMarkParallelLoopsPass,
    CpuRejectGpuOpsPass,
    CpuSerializeNestedParallelLoopsPass,
    CpuSplitVectorLoopsPass,
    CpuStackBlockLocalsPass,
    CpuVectorizeExpPass,
)
from tl_codegen_cpu.passes.check_bounds import CpuCheckBoundsPass
from tl_codegen_cpu.passes.device_asserts import CpuLowerDeviceAssertsPass
from tl_codegen_cpu.passes.eager_selects import CpuEagerSelectsPass
from tl_codegen_cpu.passes.inline_bfloat16_lets import CpuInlineBfloat16LetsPass
from tl_codegen_cpu.passes.integer_division import CpuIntegerDivisionWithoutTrapsPass
from tl_codegen_cpu.passes.interchange_grid_rows import CpuInterchangeGridRowsPass
from tl_codegen_cpu.passes.interchange_reductions import CpuInterchangeReductionsPass
from tl_codegen_cpu.passes.max_min_ignore_nan import CpuMaxMinIgnoreNanPass
from tl_codegen_cpu.passes.minimum_divisors import CpuMinimumDivisorsPass
from tl_codegen_cpu.passes.nan_self_comparisons import CpuNanSelfComparisonsPass
from tl_codegen_cpu.passes.round_bfloat16 import CpuRoundBfloat16Pass
from tl_codegen_cpu.passes.saturate_float_to_int import CpuSaturateFloatToIntPass
from tl_codegen_cpu.passes.scalar_gemms import CpuLowerScalarGemmsPass
from tl_codegen_cpu.passes.scalarize_vector_accesses import CpuScalarizeVectorAccessesPass
from tl_codegen_cpu.passes.vector_bool_loads import CpuVectorBoolLoadsPass
from tl_codegen_cpu.passes.vector_loop_binds import CpuInlineVectorLoopBindsPass
from tl_codegen_cpu.passes.widen_scalar_params import CpuWidenScalarParamsPass
from tl_codegen_cpu.passes.wrap_integer_overflow import CpuWrapIntegerOverflowPass
from tl_codegen_cpu.passes.wrap_narrow_integers import CpuWrapNarrowIntegersPass
from tl_passes import (
    LowerAllocVarPass,
    LowerPipelinedLoopsPass,
    Pass,
    RemoveNoOpPass,
    SimplifyPass,
)
from tl_passes.fold_constant_math import FoldConstantMathPass
from tl_passes.minimum_comparisons import Int32MinimumComparisonsPass
from tl_passes.wrapping_casts import WrappingCastsPass


def _common(gemm_style: str, split_vector_loops: bool, llvm: bool) -> list[Pass]:
    # TVM's C printer cannot print vectors (vectorization is off on c), so only llvm
    # needs long vectorized loops cut into register-wide chunks.
    split: list[Pass] = [CpuSplitVectorLoopsPass()] if split_vector_loops else []
    return [
        # First: before any simplification takes a wrapping conversion for its value.
        WrappingCastsPass(),
        Int32MinimumComparisonsPass(),
        CpuLowerWarpShufflesPass(),
        CpuRejectGpuOpsPass(),
        CpuScalarizeVectorAccessesPass(),
        CpuWidenScalarParamsPass(),
        LowerPipelinedLoopsPass(),
        LowerAllocVarPass(),
        CpuLowerLaunchPass(),
        CpuForwardCopiesPass(),
        CpuLowerScalarGemmsPass(gemm_style=gemm_style),
        CpuInterchangeReductionsPass(),
        CpuInterchangeGridRowsPass(),
        CpuEagerSelectsPass(),
        CpuLowerTileOpsPass(gemm_style=gemm_style),
        # On c, cpu-mark-parallel-loops serializes one-block grids once their arrays
        # are on the stack (cpu-stack-block-locals places those of parallel loops).
        CpuLowerParallelLoopsPass(serial_one_block_grids=split_vector_loops),
        *split,
        CpuLocalizeTilesPass(),
        FoldConstantMathPass(),
        CpuLegalizeHalfPrecisionPass(),
        CpuLegalizeFloat8Pass(),
        CpuRoundBfloat16Pass(),
        # Before cpu-max-min-ignore-nan, which then sees a kernel's own clamps as written.
        CpuSaturateFloatToIntPass(),
        CpuMaxMinIgnoreNanPass(llvm_intrinsics=llvm),
        CpuIntegerDivisionWithoutTrapsPass(),
        CpuMinimumDivisorsPass(),  # a // MIN, a % MIN: TVM's llvm lowering negated MIN
        # After the division pass, whose -a may overflow. C wraps unsigned arithmetic.
        CpuWrapIntegerOverflowPass(wrap_unsigned=llvm),
        CpuNanSelfComparisonsPass(unordered_not_equal=llvm),
        CpuVectorizeExpPass(),
        CpuInlineVectorLoopBindsPass(),  # TVM's vectorizer kept a Bind as one lane
        CpuLegalizeIntrinsicsPass(),
        # After the passes that bind values with Let (legalize-intrinsics' tanh too).
        CpuInlineBfloat16LetsPass(),
        SimplifyPass(),
        RemoveNoOpPass(),
        # After simplification, which would fold the int8 test back into the bool.
        *([CpuVectorBoolLoadsPass()] if llvm else []),
        # T.device_assert: a failure flag, checked by the call after the body.
        CpuLowerDeviceAssertsPass(),
        # Last, on the lowered accesses: checked mode's guards (nothing when it is off).
        CpuCheckBoundsPass(),
        # TVM's LLVM code refuses a parallel loop in a parallel loop (c: when marking).
        *([CpuSerializeNestedParallelLoopsPass()] if llvm else []),
    ]


#: The last stages of the ``c`` pipeline, which prepare a lowered module for
#: TVM's C printer: block-local arrays on the thread's stack (a heap workspace's
#: failure ``return`` is illegal inside an OpenMP region), then a marker call
#: before each outermost parallel loop, which the C source generator turns into
#: ``#pragma omp parallel for``, one before each vector loop proven free of
#: loop-carried dependence (``#pragma GCC ivdep``: no run-time overlap checks);
#: then fp16 <-> fp32 casts as bit arithmetic gcc vectorizes (after the loop
#: proofs, which do not follow the ``uint16`` views it reads fp16 memory through),
#: and, last, float constants the printer would round to seven digits written
#: as marker calls the C toolchain turns into exact hexadecimal literals.
C_PREPARATION_PASSES: tuple[Pass, ...] = (
    CpuStackBlockLocalsPass(),
    CpuMarkParallelLoopsPass(),
    CpuMarkIndependentLoopsPass(),
    CpuFloat16BitsPass(),
    CpuExactFloatConstantsPass(),
)

#: Target ``c``.
C_PASSES: tuple[Pass, ...] = (
    *_common("c-vector-extension", split_vector_loops=False, llvm=False),
    CpuCallHalfConversionsPass(),  # gcc converts fp16 one element at a time
    CpuWrapNarrowIntegersPass(),  # C computes 8/16-bit integers as int
    *C_PREPARATION_PASSES,
)

#: Target ``llvm``.
LLVM_PASSES: tuple[Pass, ...] = tuple(_common("tir", split_vector_loops=True, llvm=True))

C_PIPELINE: Pipeline = pipeline_from_passes("cpu-c", C_PASSES)
LLVM_PIPELINE: Pipeline = pipeline_from_passes("cpu-llvm", LLVM_PASSES)


def prepare_for_c(mod: IRModule) -> IRModule:
    """Run only the C preparation stages of `C_PIPELINE` on ``mod``.

    For modules built by hand rather than lowered by `C_PIPELINE` (which
    already ends with these stages): ``generate_c_source`` and ``build_c``
    expect a prepared module.

    Raises:
        TypeError: ``mod`` is not an IRModule.
        BlockLocalsTooLargeError: a parallel loop's block-local arrays exceed
            the stack budget.
    """
    return C_PIPELINE.run(mod, start=C_PREPARATION_PASSES[0].name)


#: Kind -> pipeline.
PIPELINES: dict[str, Pipeline] = {"c": C_PIPELINE, "llvm": LLVM_PIPELINE}
