"""The lowering pipeline for 'rocm': integer conversions and int32-minimum comparisons
kept through TVM's simplifier, then the shared GPU passes (tl_passes.gpu) with its
traits. TVM's ROCm code generator writes LLVM IR, which computes narrow integers at
their width, so no narrow-integer rule is needed."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes.gpu import gpu_passes
from tl_passes.minimum_comparisons import Int32MinimumComparisonsPass
from tl_passes.wrapping_casts import WrappingCastsPass

from .traits import HIP_TRAITS

#: First, before any simplification: ``wrapping-casts`` and ``int32-minimum-comparisons``
#: (TVM's simplifier took a wrapping conversion for its value and folded
#: ``x == INT32_MIN``); then the shared GPU passes with the hip traits: reductions
#: shuffle across the target's wavefront (``thread_warp_size``, 64 on gfx9), atomics use
#: LLVM's (add only).
PIPELINE = pipeline_from_passes(
    "rocm",
    [WrappingCastsPass(), Int32MinimumComparisonsPass(), *gpu_passes(HIP_TRAITS)],
)
