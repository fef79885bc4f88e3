"""The lowering pipeline for 'webgpu': the shared GPU passes with static workgroup memory."""

from __future__ import annotations

from tl_backend_api import pipeline_from_passes
from tl_passes.gpu import gpu_passes

from .traits import WEBGPU_TRAITS

#: The shared GPU passes with the webgpu traits: shared tiles become static workgroup
#: arrays, reductions combine through workgroup memory, atomics are a clear error.
PIPELINE = pipeline_from_passes("webgpu", gpu_passes(WEBGPU_TRAITS))
