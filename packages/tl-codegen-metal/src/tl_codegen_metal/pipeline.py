"""The lowering pipeline for 'metal': the shared GPU passes with static threadgroup memory."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes.gpu import gpu_passes

from .traits import METAL_TRAITS

#: The shared GPU passes with the metal traits: shared tiles become static threadgroup
#: arrays, reductions combine through threadgroup memory, atomics are a clear error.
PIPELINE = pipeline_from_passes("metal", gpu_passes(METAL_TRAITS))
