"""The `GpuTraits` of the webgpu backend: what the shared GPU lowering may use in WGSL."""

from __future__ import annotations

from tl_passes.gpu import GpuTraits, SharedMemoryModel

#: No subgroup shuffles (reductions combine through workgroup memory), no
#: atomics yet, vectors of at most 4 lanes (WGSL's widest), static workgroup
#: arrays (TVM's WebGPU codegen has no dynamic workgroup memory).
WEBGPU_TRAITS = GpuTraits(
    name="webgpu",
    warp_shuffle=None,
    atomics={},
    vector_bytes=16,
    max_vector_lanes=4,
    shared_memory=SharedMemoryModel.STATIC,
)
