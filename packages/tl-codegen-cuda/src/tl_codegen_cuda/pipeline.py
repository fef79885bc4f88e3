"""The lowering pipeline for 'cuda': integer conversions and int32-minimum comparisons kept
through TVM's simplifier, the shared GPU passes (tl_passes.gpu) with its traits, then the
CUDA C rules: fp16/bf16 math functions computed in float32 and rounded once, narrow
integers wrapped at their width (C++ promotes them to ``int``) and vector accesses in the
widths TVM's CUDA printer writes correctly."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes.gpu import gpu_passes
from tl_passes.gpu.narrow_integers import GpuWrapNarrowIntegersPass
from tl_passes.minimum_comparisons import Int32MinimumComparisonsPass
from tl_passes.wrapping_casts import WrappingCastsPass

from .half_math import CudaWidenHalfMathPass
from .traits import CUDA_TRAITS
from .vectors import CudaLegalizeVectorsPass

#: The shared GPU passes with the cuda traits: scalars to thread-local arrays, pipelined
#: loops in order -> fragment layouts -> barriers on the tile program -> per-thread code
#: (warp-shuffle reductions, CUDA atomics) -> dynamic shared memory size -> simplify;
#: then ``cuda-widen-half-math`` (before the narrow-integer pass, which wraps the 16-bit
#: arithmetic of its ``nextafter``), ``gpu-wrap-narrow-integers`` and
#: ``cuda-legalize-vectors``. First, before any
#: simplification: ``wrapping-casts`` and ``int32-minimum-comparisons`` (TVM's
#: simplifier took a wrapping conversion for its value and folded ``x == INT32_MIN``).
PIPELINE = pipeline_from_passes(
    "cuda",
    [
        WrappingCastsPass(),
        Int32MinimumComparisonsPass(),
        *gpu_passes(CUDA_TRAITS),
        CudaWidenHalfMathPass(),
        GpuWrapNarrowIntegersPass(),
        CudaLegalizeVectorsPass(),
    ],
)
