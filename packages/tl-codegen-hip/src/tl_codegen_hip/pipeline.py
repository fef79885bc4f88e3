"""The lowering pipeline for 'rocm': the shared GPU passes (tl_passes.gpu) with its traits."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes.gpu import gpu_passes

from .traits import HIP_TRAITS

#: The shared GPU passes with the hip traits: reductions shuffle across the target's
#: wavefront (``thread_warp_size``, 64 on gfx9), atomics use LLVM's (add only).
PIPELINE = pipeline_from_passes("rocm", gpu_passes(HIP_TRAITS))
