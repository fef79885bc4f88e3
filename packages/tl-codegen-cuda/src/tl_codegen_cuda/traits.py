"""The `GpuTraits` of the cuda backend: what the shared GPU lowering may use on CUDA."""

from __future__ import annotations

from pathlib import Path

from tl_passes.gpu import (
    AsyncCopy,
    AtomicCall,
    GpuTraits,
    SharedMemoryModel,
    SwizzledOperands,
    WarpShuffle,
)

from .device_assert import CUDA_DEVICE_ASSERT
from .features import FEATURES
from .tensor_cores import CUDA_MATRIX_INSTRUCTIONS, CUDA_MATRIX_LOAD

#: Device helpers the CUDA lowering of the atomics calls (``atomic_max``/``atomic_min``:
#: CAS loops for floats, which write ``value`` only when it is larger (smaller), so a
#: NaN value never lands and a NaN in memory stays, as in TileLang's and the CPU's CAS
#: loops; the hardware's ``atomicMax``/``atomicMin`` for ints; the rest,
#: ``include/tl_atomics_more.cuh``: 64-bit and unsigned integers, 16-bit floats, ``or``,
#: ``load``, ``store``); the cuda codegen puts them before the kernels.
CUDA_ATOMICS_PRELUDE = r"""
__device__ __forceinline__ float tl_atomic_max(float* address, float value) {
  int* bits = (int*)address;
  int old = *bits, assumed;
  do {
    assumed = old;
    if (!(value > __int_as_float(assumed))) break;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (assumed != old);
  return __int_as_float(old);
}
__device__ __forceinline__ float tl_atomic_min(float* address, float value) {
  int* bits = (int*)address;
  int old = *bits, assumed;
  do {
    assumed = old;
    if (!(value < __int_as_float(assumed))) break;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (assumed != old);
  return __int_as_float(old);
}
__device__ __forceinline__ double tl_atomic_max(double* address, double value) {
  unsigned long long* bits = (unsigned long long*)address;
  unsigned long long old = *bits, assumed;
  do {
    assumed = old;
    if (!(value > __longlong_as_double(assumed))) break;
    old = atomicCAS(bits, assumed, __double_as_longlong(value));
  } while (assumed != old);
  return __longlong_as_double(old);
}
__device__ __forceinline__ double tl_atomic_min(double* address, double value) {
  unsigned long long* bits = (unsigned long long*)address;
  unsigned long long old = *bits, assumed;
  do {
    assumed = old;
    if (!(value < __longlong_as_double(assumed))) break;
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
""" + (Path(__file__).resolve().parent / "include" / "tl_atomics_more.cuh").read_text()

#: The dtypes the CUDA atomics take (``atomicAdd``: native, or the prelude's overloads
#: for 64-bit integers; max/min: native for integers, CAS loops for floats).
CUDA_ATOMIC_DTYPES = frozenset(
    {"int32", "uint32", "int64", "uint64", "float32", "float64", "float16", "bfloat16"}
)
#: The dtypes ``T.atomic_or`` takes on CUDA (``atomicOr``: integers).
CUDA_BITWISE_ATOMIC_DTYPES = frozenset({"int32", "uint32", "int64", "uint64"})

#: The device function a named barrier (``T.sync_threads(id, count)``) calls, and its
#: definition: PTX ``bar.sync id, count`` (the ``count`` threads arriving at barrier
#: ``id`` wait for each other; ``__syncthreads()`` is barrier 0 of the whole block).
#: The codegen adds the definition only to sources that call it.
CUDA_NAMED_BARRIER = "tl_named_barrier_sync"
#: (The tests' CPU emulation defines TL_CUDA_EMULATION and its own version.)
CUDA_NAMED_BARRIER_PRELUDE = r"""
#ifndef TL_CUDA_EMULATION
__device__ __forceinline__ void tl_named_barrier_sync(int barrier_id, int arrive_count) {
  asm volatile("bar.sync %0, %1;" : : "r"(barrier_id), "r"(arrive_count) : "memory");
}
#endif
"""

#: ``cp.async`` (sm_80+) through the tensor-core header's helpers (tl_tensor_core.h):
#: 16-byte copies bypass L1 (``.cg``), 8 and 4 bytes go through it (``.ca``, the only
#: forms PTX has for them); ``cp.async.wait_group`` takes 0..7.
CUDA_ASYNC_COPY = AsyncCopy(
    copies={16: "tl_cp_async_16", 8: "tl_cp_async_8", 4: "tl_cp_async_4"},
    commit="tl_cp_async_commit",
    wait="tl_cp_async_wait",
    zero_fill_suffix="_zfill",
    max_pending=7,
    available=FEATURES["async_copy"],
)

#: ldmatrix reads 16-bit (and, as pairs, 8-bit) gemm operands 16-byte row by row; on
#: archs with tensor cores those tiles get the XOR swizzle that spreads 8 rows over
#: the 8 16-byte bank groups.
CUDA_SWIZZLED_OPERANDS = SwizzledOperands(
    dtype_bits=frozenset({16, 8}), available=FEATURES["tensor_cores"]
)

#: Warps of the target's ``thread_warp_size`` (32; 1 turns shuffles off), ``__shfl_xor_sync``
#: through TVM's warp-shuffle intrinsic, ``atomicAdd`` and the prelude's max/min, or,
#: load and store,
#: 128-bit vectors, dynamic shared memory, cp.async rings and swizzled gemm operands,
#: ``mma.sync`` tensor-core GEMMs on sm_80+ with operands read by ``ldmatrix``, named
#: barriers through ``bar.sync``.
CUDA_TRAITS = GpuTraits(
    name="cuda",
    warp_shuffle=WarpShuffle(),
    atomics={
        "add": AtomicCall("atomicAdd", dtypes=CUDA_ATOMIC_DTYPES),
        "max": AtomicCall("tl_atomic_max", dtypes=CUDA_ATOMIC_DTYPES),
        "min": AtomicCall("tl_atomic_min", dtypes=CUDA_ATOMIC_DTYPES),
        "or": AtomicCall("tl_atomic_or", dtypes=CUDA_BITWISE_ATOMIC_DTYPES),
        "load": AtomicCall("tl_atomic_load", dtypes=CUDA_ATOMIC_DTYPES),
        "store": AtomicCall("tl_atomic_store", dtypes=CUDA_ATOMIC_DTYPES),
    },
    atomics_prelude=CUDA_ATOMICS_PRELUDE,
    vector_bytes=16,
    max_vector_lanes=16,
    shared_memory=SharedMemoryModel.DYNAMIC,
    async_copy=CUDA_ASYNC_COPY,
    swizzled_operands=CUDA_SWIZZLED_OPERANDS,
    matrix_instructions=CUDA_MATRIX_INSTRUCTIONS,
    matrix_load=CUDA_MATRIX_LOAD,
    named_barrier=CUDA_NAMED_BARRIER,
    device_assert=CUDA_DEVICE_ASSERT,
)
