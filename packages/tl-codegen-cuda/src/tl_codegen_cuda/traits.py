"""The `GpuTraits` of the cuda backend: what the shared GPU lowering may use on CUDA."""

from __future__ import annotations

from tl_passes.gpu import AtomicCall, GpuTraits, SharedMemoryModel, WarpShuffle

#: Device helpers the CUDA lowering of ``atomic_max``/``atomic_min`` calls (CAS
#: loops for floats, the hardware's ``atomicMax``/``atomicMin`` for ints); the
#: cuda codegen puts them before the kernels.
CUDA_ATOMICS_PRELUDE = r"""
__device__ __forceinline__ float tl_atomic_max(float* address, float value) {
  int* bits = (int*)address;
  int old = *bits, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= value) break;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (assumed != old);
  return __int_as_float(old);
}
__device__ __forceinline__ float tl_atomic_min(float* address, float value) {
  int* bits = (int*)address;
  int old = *bits, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) <= value) break;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (assumed != old);
  return __int_as_float(old);
}
__device__ __forceinline__ double tl_atomic_max(double* address, double value) {
  unsigned long long* bits = (unsigned long long*)address;
  unsigned long long old = *bits, assumed;
  do {
    assumed = old;
    if (__longlong_as_double(assumed) >= value) break;
    old = atomicCAS(bits, assumed, __double_as_longlong(value));
  } while (assumed != old);
  return __longlong_as_double(old);
}
__device__ __forceinline__ double tl_atomic_min(double* address, double value) {
  unsigned long long* bits = (unsigned long long*)address;
  unsigned long long old = *bits, assumed;
  do {
    assumed = old;
    if (__longlong_as_double(assumed) <= value) break;
    old = atomicCAS(bits, assumed, __double_as_longlong(value));
  } while (assumed != old);
  return __longlong_as_double(old);
}
__device__ __forceinline__ int tl_atomic_max(int* address, int value) {
  return atomicMax(address, value);
}
__device__ __forceinline__ int tl_atomic_min(int* address, int value) {
  return atomicMin(address, value);
}
"""

#: Warps of the target's ``thread_warp_size`` (32; 1 turns shuffles off), ``__shfl_xor_sync``
#: through TVM's warp-shuffle intrinsic, ``atomicAdd`` and the prelude's max/min,
#: 128-bit vectors, dynamic shared memory.
CUDA_TRAITS = GpuTraits(
    name="cuda",
    warp_shuffle=WarpShuffle(),
    atomics={
        "add": AtomicCall("atomicAdd"),
        "max": AtomicCall("tl_atomic_max"),
        "min": AtomicCall("tl_atomic_min"),
    },
    atomics_prelude=CUDA_ATOMICS_PRELUDE,
    vector_bytes=16,
    max_vector_lanes=16,
    shared_memory=SharedMemoryModel.DYNAMIC,
)
