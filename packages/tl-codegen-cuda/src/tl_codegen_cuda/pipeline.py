"""The lowering pipeline for 'cuda': the shared GPU passes (tl_passes.gpu) with its traits."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes.gpu import gpu_passes

from .traits import CUDA_TRAITS

#: The shared GPU passes with the cuda traits: scalars to thread-local arrays, pipelined
#: loops in order -> fragment layouts -> barriers on the tile program -> per-thread code
#: (warp-shuffle reductions, CUDA atomics) -> dynamic shared memory size -> simplify.
PIPELINE = pipeline_from_passes("cuda", gpu_passes(CUDA_TRAITS))
