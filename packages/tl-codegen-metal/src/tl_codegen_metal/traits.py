"""The `GpuTraits` of the metal backend: what the shared GPU lowering may use on Metal."""

from __future__ import annotations

from tl_passes.gpu import GpuTraits, SharedMemoryModel

#: Reductions combine through threadgroup memory (simdgroup shuffles are not
#: used yet), no atomics yet, vectors of at most 4 lanes (what TVM's Metal
#: codegen prints), static threadgroup arrays (TVM's Metal codegen has no
#: dynamic threadgroup memory).
METAL_TRAITS = GpuTraits(
    name="metal",
    warp_shuffle=None,
    atomics={},
    vector_bytes=16,
    max_vector_lanes=4,
    shared_memory=SharedMemoryModel.STATIC,
)
