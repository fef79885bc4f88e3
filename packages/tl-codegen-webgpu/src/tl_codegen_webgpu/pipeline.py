"""The lowering pipeline for 'webgpu': integer conversions and int32-minimum comparisons
kept through TVM's simplifier, then the shared GPU passes with static workgroup memory.
WGSL's integers are 32 bits wide (``i32``/``u32``) and wrap, so conversions are written
with 32-bit arithmetic only."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes.gpu import gpu_passes
from tl_passes.minimum_comparisons import Int32MinimumComparisonsPass
from tl_passes.wrapping_casts import WrappingCastsPass

from .traits import WEBGPU_TRAITS

#: First, before any simplification: ``wrapping-casts`` (at 32 bits: WGSL has no 64-bit
#: integer) and ``int32-minimum-comparisons``; then the shared GPU passes with the webgpu
#: traits: shared tiles become static workgroup arrays, reductions combine through
#: workgroup memory, atomics are a clear error.
PIPELINE = pipeline_from_passes(
    "webgpu",
    [
        WrappingCastsPass(wide_bits=32),
        Int32MinimumComparisonsPass(),
        *gpu_passes(WEBGPU_TRAITS),
    ],
)
