"""The `GpuTraits` of the hip backend: what the shared GPU lowering may use on ROCm."""

from __future__ import annotations

from tl_passes.gpu import AtomicCall, GpuTraits, SharedMemoryModel, WarpShuffle

#: The dtypes ``T.atomic_add`` takes on ROCm: TVM's AMDGPU codegen of ``tirx.atomic_add``
#: emits 32-bit ``atomicrmw add`` / ``fadd`` only ("Only supports 32 bit atomic for now").
HIP_ATOMIC_DTYPES = frozenset({"int32", "uint32", "float32"})

#: Wavefronts of the target's ``thread_warp_size`` (64 on gfx9, 32 on wave32
#: parts), shuffles through TVM's warp-shuffle intrinsic (the AMDGPU codegen
#: ignores the mask), 32-bit atomic add through LLVM's atomics (no max/min, or,
#: load, store yet),
#: 128-bit vectors, dynamic shared memory.
HIP_TRAITS = GpuTraits(
    name="rocm",
    warp_shuffle=WarpShuffle(),
    atomics={"add": AtomicCall("tirx.atomic_add", intrinsic=True, dtypes=HIP_ATOMIC_DTYPES)},
    vector_bytes=16,
    max_vector_lanes=16,
    shared_memory=SharedMemoryModel.DYNAMIC,
)
