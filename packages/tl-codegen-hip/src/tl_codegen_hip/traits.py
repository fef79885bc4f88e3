"""The `GpuTraits` of the hip backend: what the shared GPU lowering may use on ROCm."""

from __future__ import annotations

from tl_passes.gpu import AtomicCall, GpuTraits, SharedMemoryModel, WarpShuffle

#: Wavefronts of the target's ``thread_warp_size`` (64 on gfx9, 32 on wave32
#: parts), shuffles through TVM's warp-shuffle intrinsic (the AMDGPU codegen
#: ignores the mask), atomic add through LLVM's atomics (no max/min yet),
#: 128-bit vectors, dynamic shared memory.
HIP_TRAITS = GpuTraits(
    name="rocm",
    warp_shuffle=WarpShuffle(),
    atomics={"add": AtomicCall("tirx.atomic_add", intrinsic=True)},
    vector_bytes=16,
    max_vector_lanes=16,
    shared_memory=SharedMemoryModel.DYNAMIC,
)
