
/* tl-codegen-cuda atomics beyond atomicAdd and the float/int max/min above: each
   returns the element's value from before the update (return_prev=True keeps it). */
/* atomicAdd of 64-bit integers: CUDA has the unsigned long long one only; two's
   complement adds alike. int64_t/uint64_t are long/unsigned long on LP64 hosts. */
__device__ __forceinline__ long atomicAdd(long* address, long value) {
  return (long)atomicAdd((unsigned long long*)address, (unsigned long long)value);
}
__device__ __forceinline__ unsigned long atomicAdd(unsigned long* address, unsigned long value) {
  return (unsigned long)atomicAdd((unsigned long long*)address, (unsigned long long)value);
}
__device__ __forceinline__ long long atomicAdd(long long* address, long long value) {
  return (long long)atomicAdd((unsigned long long*)address, (unsigned long long)value);
}
/* max/min of unsigned and 64-bit integers: the hardware's atomicMax/atomicMin. */
#define TL_ATOMIC_INT_MAX_MIN(T, NATIVE)                                                   \
  __device__ __forceinline__ T tl_atomic_max(T* address, T value) {                        \
    return (T)atomicMax((NATIVE*)address, (NATIVE)value);                                  \
  }                                                                                        \
  __device__ __forceinline__ T tl_atomic_min(T* address, T value) {                        \
    return (T)atomicMin((NATIVE*)address, (NATIVE)value);                                  \
  }
TL_ATOMIC_INT_MAX_MIN(unsigned int, unsigned int)
TL_ATOMIC_INT_MAX_MIN(long, long long)
TL_ATOMIC_INT_MAX_MIN(long long, long long)
TL_ATOMIC_INT_MAX_MIN(unsigned long, unsigned long long)
TL_ATOMIC_INT_MAX_MIN(unsigned long long, unsigned long long)
/* T.atomic_or: the hardware's atomicOr. */
#define TL_ATOMIC_OR(T, NATIVE)                                                            \
  __device__ __forceinline__ T tl_atomic_or(T* address, T value) {                         \
    return (T)atomicOr((NATIVE*)address, (NATIVE)value);                                   \
  }
TL_ATOMIC_OR(int, int)
TL_ATOMIC_OR(unsigned int, unsigned int)
TL_ATOMIC_OR(long, unsigned long long)
TL_ATOMIC_OR(long long, unsigned long long)
TL_ATOMIC_OR(unsigned long, unsigned long long)
TL_ATOMIC_OR(unsigned long long, unsigned long long)
/* max/min of 16-bit floats: a compare-and-swap on the aligned 32-bit word holding the
   element, compared in float (the result is one of the two values, exactly). */
#define TL_ATOMIC_MAX_MIN_16(T, TO_FLOAT)                                                  \
  __device__ __forceinline__ T tl_atomic_max_min_16(T* address, T value, bool larger) {   \
    unsigned int* word = (unsigned int*)((unsigned long long)address & ~3ull);             \
    unsigned int shift = ((unsigned long long)address & 2ull) ? 16u : 0u;                  \
    unsigned short value_bits = *reinterpret_cast<unsigned short*>(&value);                \
    float v = TO_FLOAT(value);                                                             \
    unsigned int old = *word, assumed;                                                     \
    unsigned short current_bits;                                                           \
    do {                                                                                   \
      assumed = old;                                                                       \
      current_bits = (unsigned short)(assumed >> shift);                                   \
      float c = TO_FLOAT(*reinterpret_cast<T*>(&current_bits));                            \
      if (!(larger ? v > c : v < c)) break;                                                \
      unsigned int desired = (assumed & ~(0xffffu << shift)) | ((unsigned int)value_bits << shift); \
      old = atomicCAS(word, assumed, desired);                                             \
    } while (assumed != old);                                                              \
    return *reinterpret_cast<T*>(&current_bits);                                           \
  }                                                                                        \
  __device__ __forceinline__ T tl_atomic_max(T* address, T value) {                        \
    return tl_atomic_max_min_16(address, value, true);                                     \
  }                                                                                        \
  __device__ __forceinline__ T tl_atomic_min(T* address, T value) {                        \
    return tl_atomic_max_min_16(address, value, false);                                    \
  }
#ifdef __CUDA_FP16_H__
TL_ATOMIC_MAX_MIN_16(__half, __half2float)
#endif
#ifdef __CUDA_BF16_H__
TL_ATOMIC_MAX_MIN_16(__nv_bfloat16, __bfloat162float)
#endif
/* T.atomic_load / T.atomic_store: the element's bits read or written through a
   volatile access between two fences, sequentially consistent whatever memory_order
   asked (at least as strong as any). */
template <int N> struct tl_atomic_word;
template <> struct tl_atomic_word<2> { typedef unsigned short type; };
template <> struct tl_atomic_word<4> { typedef unsigned int type; };
template <> struct tl_atomic_word<8> { typedef unsigned long long type; };
template <class T> __device__ __forceinline__ T tl_atomic_load(T* address) {
  typedef typename tl_atomic_word<sizeof(T)>::type W;
  __threadfence();
  W bits = *(volatile W*)address;
  __threadfence();
  return *reinterpret_cast<T*>(&bits);
}
template <class T> __device__ __forceinline__ T tl_atomic_store(T* address, T value) {
  typedef typename tl_atomic_word<sizeof(T)>::type W;
  __threadfence();
  *(volatile W*)address = *reinterpret_cast<W*>(&value);
  __threadfence();
  return value;
}
