"""The lowering pipeline for 'metal': integer conversions and int32-minimum comparisons
kept through TVM's simplifier, the shared GPU passes with static threadgroup memory,
then narrow integers wrapped at their width (the Metal Shading Language promotes
``char``/``short`` to ``int`` as C++ does)."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes.gpu import gpu_passes
from tl_passes.gpu.narrow_integers import GpuWrapNarrowIntegersPass
from tl_passes.minimum_comparisons import Int32MinimumComparisonsPass
from tl_passes.wrapping_casts import WrappingCastsPass

from .traits import METAL_TRAITS

#: First, before any simplification: ``wrapping-casts`` and ``int32-minimum-comparisons``;
#: then the shared GPU passes with the metal traits (shared tiles become static
#: threadgroup arrays, reductions combine through threadgroup memory, atomics are a
#: clear error); last ``gpu-wrap-narrow-integers``.
PIPELINE = pipeline_from_passes(
    "metal",
    [
        WrappingCastsPass(),
        Int32MinimumComparisonsPass(),
        *gpu_passes(METAL_TRAITS),
        GpuWrapNarrowIntegersPass(),
    ],
)
