"""`CPU_PASS_REGISTRY`: the CPU backend's passes by name (classes imported on first use)."""

from __future__ import annotations

from typing import Any

from tl_passes import Pass
from tl_passes.registry import PassFactory, PassRegistry, lazy_pass_class


def _cpu(module: str, class_name: str) -> PassFactory:
    return lazy_pass_class(f"tl_codegen_cpu.passes.{module}", class_name)


#: Pass name -> lazy factory. A test checks every key equals the class's ``name``.
CPU_PASS_REGISTRY = PassRegistry(
    {
        "cpu-lower-warp-shuffles": _cpu("lower_warp_shuffles", "CpuLowerWarpShufflesPass"),
        "cpu-reject-gpu-ops": _cpu("reject_gpu_ops", "CpuRejectGpuOpsPass"),
        "cpu-lower-device-asserts": _cpu("device_asserts", "CpuLowerDeviceAssertsPass"),
        "cpu-scalarize-vector-accesses": _cpu(
            "scalarize_vector_accesses", "CpuScalarizeVectorAccessesPass"
        ),
        "cpu-widen-scalar-params": _cpu("widen_scalar_params", "CpuWidenScalarParamsPass"),
        "cpu-lower-launch": _cpu("lower_launch", "CpuLowerLaunchPass"),
        "cpu-forward-copies": _cpu("forward_copies", "CpuForwardCopiesPass"),
        "cpu-lower-scalar-gemms": _cpu("scalar_gemms", "CpuLowerScalarGemmsPass"),
        "cpu-interchange-reductions": _cpu(
            "interchange_reductions", "CpuInterchangeReductionsPass"
        ),
        "cpu-interchange-grid-rows": _cpu("interchange_grid_rows", "CpuInterchangeGridRowsPass"),
        "cpu-eager-selects": _cpu("eager_selects", "CpuEagerSelectsPass"),
        "cpu-lower-tile-ops": _cpu("lower_tile_ops", "CpuLowerTileOpsPass"),
        "cpu-lower-parallel-loops": _cpu("lower_parallel_loops", "CpuLowerParallelLoopsPass"),
        "cpu-split-vector-loops": _cpu("split_vector_loops", "CpuSplitVectorLoopsPass"),
        "cpu-localize-tiles": _cpu("localize_tiles", "CpuLocalizeTilesPass"),
        "cpu-legalize-half-precision": _cpu(
            "legalize_half_precision", "CpuLegalizeHalfPrecisionPass"
        ),
        "cpu-legalize-float8": _cpu("legalize_float8", "CpuLegalizeFloat8Pass"),
        "cpu-round-bfloat16": _cpu("round_bfloat16", "CpuRoundBfloat16Pass"),
        "cpu-integer-division-without-traps": _cpu(
            "integer_division", "CpuIntegerDivisionWithoutTrapsPass"
        ),
        "cpu-minimum-divisors": _cpu("minimum_divisors", "CpuMinimumDivisorsPass"),
        "cpu-nan-self-comparisons": _cpu("nan_self_comparisons", "CpuNanSelfComparisonsPass"),
        "cpu-inline-bfloat16-lets": _cpu("inline_bfloat16_lets", "CpuInlineBfloat16LetsPass"),
        "cpu-inline-vector-loop-binds": _cpu("vector_loop_binds", "CpuInlineVectorLoopBindsPass"),
        "cpu-vector-bool-loads": _cpu("vector_bool_loads", "CpuVectorBoolLoadsPass"),
        "cpu-serialize-nested-parallel-loops": _cpu(
            "mark_parallel_loops", "CpuSerializeNestedParallelLoopsPass"
        ),
        "cpu-max-min-ignore-nan": _cpu("max_min_ignore_nan", "CpuMaxMinIgnoreNanPass"),
        "cpu-saturate-float-to-int": _cpu("saturate_float_to_int", "CpuSaturateFloatToIntPass"),
        "cpu-wrap-integer-overflow": _cpu("wrap_integer_overflow", "CpuWrapIntegerOverflowPass"),
        "cpu-wrap-narrow-integers": _cpu("wrap_narrow_integers", "CpuWrapNarrowIntegersPass"),
        "cpu-vectorize-exp": _cpu("vectorize_exp", "CpuVectorizeExpPass"),
        "cpu-legalize-intrinsics": _cpu("legalize_intrinsics", "CpuLegalizeIntrinsicsPass"),
        "cpu-call-half-conversions": _cpu("half_conversions", "CpuCallHalfConversionsPass"),
        "cpu-float16-bits": _cpu("float16_bits", "CpuFloat16BitsPass"),
        "cpu-stack-block-locals": _cpu("stack_block_locals", "CpuStackBlockLocalsPass"),
        "cpu-mark-parallel-loops": _cpu("mark_parallel_loops", "CpuMarkParallelLoopsPass"),
        "cpu-mark-independent-loops": _cpu("mark_independent_loops", "CpuMarkIndependentLoopsPass"),
        "cpu-exact-float-constants": _cpu("exact_float_constants", "CpuExactFloatConstantsPass"),
    }
)


def create_cpu_pass(name: str, **options: Any) -> Pass:
    """Instantiate the CPU pass ``name`` with ``options`` (see `tl_passes.PassRegistry.create`).

    Raises:
        KeyError: an unknown name (the message lists the CPU passes).
        TypeError: an option the pass does not have.
    """
    return CPU_PASS_REGISTRY.create(name, **options)
