/* tl-codegen-cpu CPU atomics (GCC __atomic builtins). */
#include <stdint.h>
TL_ATOMIC_STORAGE int32_t tl_atomic_add_float32(float* address, float value) {
  uint32_t* bits = (uint32_t*)address;
  uint32_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float current_value;
    __builtin_memcpy(&current_value, &expected, sizeof current_value);
    float next_value = current_value + value;
    uint32_t desired;
    __builtin_memcpy(&desired, &next_value, sizeof desired);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_max_float32(float* address, float value) {
  uint32_t* bits = (uint32_t*)address;
  uint32_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float current_value;
    __builtin_memcpy(&current_value, &expected, sizeof current_value);
    float next_value = (value > current_value ? value : current_value);
    uint32_t desired;
    __builtin_memcpy(&desired, &next_value, sizeof desired);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_min_float32(float* address, float value) {
  uint32_t* bits = (uint32_t*)address;
  uint32_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float current_value;
    __builtin_memcpy(&current_value, &expected, sizeof current_value);
    float next_value = (value < current_value ? value : current_value);
    uint32_t desired;
    __builtin_memcpy(&desired, &next_value, sizeof desired);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_add_float64(double* address, double value) {
  uint64_t* bits = (uint64_t*)address;
  uint64_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    double current_value;
    __builtin_memcpy(&current_value, &expected, sizeof current_value);
    double next_value = current_value + value;
    uint64_t desired;
    __builtin_memcpy(&desired, &next_value, sizeof desired);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_max_float64(double* address, double value) {
  uint64_t* bits = (uint64_t*)address;
  uint64_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    double current_value;
    __builtin_memcpy(&current_value, &expected, sizeof current_value);
    double next_value = (value > current_value ? value : current_value);
    uint64_t desired;
    __builtin_memcpy(&desired, &next_value, sizeof desired);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_min_float64(double* address, double value) {
  uint64_t* bits = (uint64_t*)address;
  uint64_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    double current_value;
    __builtin_memcpy(&current_value, &expected, sizeof current_value);
    double next_value = (value < current_value ? value : current_value);
    uint64_t desired;
    __builtin_memcpy(&desired, &next_value, sizeof desired);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_add_int32(int32_t* address, int32_t value) {
  __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
  return 0;
}
TL_ATOMIC_STORAGE int32_t tl_atomic_max_int32(int32_t* address, int32_t value) {
  int32_t* bits = (int32_t*)address;
  int32_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    int32_t current_value;
    __builtin_memcpy(&current_value, &expected, sizeof current_value);
    int32_t next_value = (value > current_value ? value : current_value);
    int32_t desired;
    __builtin_memcpy(&desired, &next_value, sizeof desired);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_min_int32(int32_t* address, int32_t value) {
  int32_t* bits = (int32_t*)address;
  int32_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    int32_t current_value;
    __builtin_memcpy(&current_value, &expected, sizeof current_value);
    int32_t next_value = (value < current_value ? value : current_value);
    int32_t desired;
    __builtin_memcpy(&desired, &next_value, sizeof desired);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_add_int64(int64_t* address, int64_t value) {
  __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
  return 0;
}
TL_ATOMIC_STORAGE int32_t tl_atomic_max_int64(int64_t* address, int64_t value) {
  int64_t* bits = (int64_t*)address;
  int64_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    int64_t current_value;
    __builtin_memcpy(&current_value, &expected, sizeof current_value);
    int64_t next_value = (value > current_value ? value : current_value);
    int64_t desired;
    __builtin_memcpy(&desired, &next_value, sizeof desired);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_min_int64(int64_t* address, int64_t value) {
  int64_t* bits = (int64_t*)address;
  int64_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    int64_t current_value;
    __builtin_memcpy(&current_value, &expected, sizeof current_value);
    int64_t next_value = (value < current_value ? value : current_value);
    int64_t desired;
    __builtin_memcpy(&desired, &next_value, sizeof desired);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
static inline float tl_atomic_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0) { float v = (float)m * 5.9604644775390625e-08f; return sign ? -v : v; }
  x = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112u) << 23) | (m << 13));
  float f; __builtin_memcpy(&f, &x, 4); return f;
}
static inline uint16_t tl_atomic_f32_to_f16(float f) {
  uint32_t x; __builtin_memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu, e = a >> 23;
  uint32_t m = (a & 0x7fffffu) | 0x800000u, r, rem, half, shift;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (e >= 143) return (uint16_t)(sign | 0x7c00u);
  if (e >= 113) {
    r = ((e - 112u) << 10) | ((a & 0x7fffffu) >> 13); rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
  }
  if (e < 102) return (uint16_t)sign;
  shift = 126u - e; r = m >> shift; rem = m & ((1u << shift) - 1u); half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (r & 1u))) r++;
  return (uint16_t)(sign | r);
}
static inline float tl_atomic_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16; float f; __builtin_memcpy(&f, &x, 4); return f;
}
static inline uint16_t tl_atomic_f32_to_bf16(float f) {
  uint32_t x; __builtin_memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
TL_ATOMIC_STORAGE int32_t tl_atomic_add_float16(void* address, float value) {
  uint16_t* bits = (uint16_t*)address;
  uint16_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float current_value = tl_atomic_f16_to_f32(expected);
    uint16_t desired = tl_atomic_f32_to_f16(current_value + value);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_max_float16(void* address, float value) {
  uint16_t* bits = (uint16_t*)address;
  uint16_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float current_value = tl_atomic_f16_to_f32(expected);
    uint16_t desired = tl_atomic_f32_to_f16((value > current_value ? value : current_value));
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_min_float16(void* address, float value) {
  uint16_t* bits = (uint16_t*)address;
  uint16_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float current_value = tl_atomic_f16_to_f32(expected);
    uint16_t desired = tl_atomic_f32_to_f16((value < current_value ? value : current_value));
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_add_bfloat16(void* address, float value) {
  uint16_t* bits = (uint16_t*)address;
  uint16_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float current_value = tl_atomic_bf16_to_f32(expected);
    uint16_t desired = tl_atomic_f32_to_bf16(current_value + value);
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_max_bfloat16(void* address, float value) {
  uint16_t* bits = (uint16_t*)address;
  uint16_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float current_value = tl_atomic_bf16_to_f32(expected);
    uint16_t desired = tl_atomic_f32_to_bf16((value > current_value ? value : current_value));
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
TL_ATOMIC_STORAGE int32_t tl_atomic_min_bfloat16(void* address, float value) {
  uint16_t* bits = (uint16_t*)address;
  uint16_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float current_value = tl_atomic_bf16_to_f32(expected);
    uint16_t desired = tl_atomic_f32_to_bf16((value < current_value ? value : current_value));
    if (__atomic_compare_exchange_n(bits, &expected, desired, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  }
}
/* The fetching atomics (T.atomic_<kind>(..., return_prev=True)): each returns the
   element's value from just before its update (16-bit floats: widened to float). */
#define TL_ATOMIC_FETCH_CAS(KIND, DTYPE, T, BITS, NEXT)                                 \
  TL_ATOMIC_STORAGE T tl_atomic_fetch_##KIND##_##DTYPE(T* address, T value) {           \
    BITS* bits = (BITS*)address;                                                        \
    BITS expected = __atomic_load_n(bits, __ATOMIC_RELAXED);                            \
    for (;;) {                                                                          \
      T current_value;                                                                  \
      __builtin_memcpy(&current_value, &expected, sizeof current_value);               \
      T next_value = (NEXT);                                                            \
      BITS desired;                                                                     \
      __builtin_memcpy(&desired, &next_value, sizeof desired);                          \
      if (__atomic_compare_exchange_n(bits, &expected, desired, 1,                      \
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))              \
        return current_value;                                                           \
    }                                                                                   \
  }
#define TL_ATOMIC_FETCH_ADD_CAS(DTYPE, T, BITS)                                         \
  TL_ATOMIC_FETCH_CAS(add, DTYPE, T, BITS, current_value + value)
#define TL_ATOMIC_FETCH_MAX_MIN(DTYPE, T, BITS)                                         \
  TL_ATOMIC_FETCH_CAS(max, DTYPE, T, BITS, value > current_value ? value : current_value) \
  TL_ATOMIC_FETCH_CAS(min, DTYPE, T, BITS, value < current_value ? value : current_value)
TL_ATOMIC_FETCH_ADD_CAS(float32, float, uint32_t)
TL_ATOMIC_FETCH_ADD_CAS(float64, double, uint64_t)
TL_ATOMIC_FETCH_MAX_MIN(float32, float, uint32_t)
TL_ATOMIC_FETCH_MAX_MIN(float64, double, uint64_t)
TL_ATOMIC_FETCH_MAX_MIN(int32, int32_t, int32_t)
TL_ATOMIC_FETCH_MAX_MIN(int64, int64_t, int64_t)
TL_ATOMIC_STORAGE int32_t tl_atomic_fetch_add_int32(int32_t* address, int32_t value) {
  return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
}
TL_ATOMIC_STORAGE int64_t tl_atomic_fetch_add_int64(int64_t* address, int64_t value) {
  return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
}
#define TL_ATOMIC_FETCH_HALF(KIND, DTYPE, TO_F32, FROM_F32, NEXT)                       \
  TL_ATOMIC_STORAGE float tl_atomic_fetch_##KIND##_##DTYPE(void* address, float value) { \
    uint16_t* bits = (uint16_t*)address;                                                \
    uint16_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);                        \
    for (;;) {                                                                          \
      float current_value = TO_F32(expected);                                           \
      uint16_t desired = FROM_F32((NEXT));                                              \
      if (__atomic_compare_exchange_n(bits, &expected, desired, 1,                      \
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))              \
        return current_value;                                                           \
    }                                                                                   \
  }
#define TL_ATOMIC_FETCH_HALF_KINDS(DTYPE, TO_F32, FROM_F32)                             \
  TL_ATOMIC_FETCH_HALF(add, DTYPE, TO_F32, FROM_F32, current_value + value)             \
  TL_ATOMIC_FETCH_HALF(max, DTYPE, TO_F32, FROM_F32,                                    \
                       value > current_value ? value : current_value)                   \
  TL_ATOMIC_FETCH_HALF(min, DTYPE, TO_F32, FROM_F32,                                    \
                       value < current_value ? value : current_value)
TL_ATOMIC_FETCH_HALF_KINDS(float16, tl_atomic_f16_to_f32, tl_atomic_f32_to_f16)
TL_ATOMIC_FETCH_HALF_KINDS(bfloat16, tl_atomic_bf16_to_f32, tl_atomic_f32_to_bf16)
/* Unsigned integers: fetch_add for add, a compare-and-swap for max/min (unsigned
   comparisons); each kind also as the fetching atomic (return_prev=True). */
#define TL_ATOMIC_INT_KINDS(DTYPE, T)                                                   \
  TL_ATOMIC_STORAGE int32_t tl_atomic_add_##DTYPE(T* address, T value) {               \
    __atomic_fetch_add(address, value, __ATOMIC_RELAXED);                               \
    return 0;                                                                           \
  }                                                                                     \
  TL_ATOMIC_STORAGE T tl_atomic_fetch_add_##DTYPE(T* address, T value) {               \
    return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);                        \
  }                                                                                     \
  TL_ATOMIC_STORAGE int32_t tl_atomic_max_##DTYPE(T* address, T value) {               \
    tl_atomic_fetch_max_##DTYPE(address, value);                                        \
    return 0;                                                                           \
  }                                                                                     \
  TL_ATOMIC_STORAGE int32_t tl_atomic_min_##DTYPE(T* address, T value) {               \
    tl_atomic_fetch_min_##DTYPE(address, value);                                        \
    return 0;                                                                           \
  }
TL_ATOMIC_FETCH_MAX_MIN(uint32, uint32_t, uint32_t)
TL_ATOMIC_FETCH_MAX_MIN(uint64, uint64_t, uint64_t)
TL_ATOMIC_INT_KINDS(uint32, uint32_t)
TL_ATOMIC_INT_KINDS(uint64, uint64_t)
/* T.atomic_or: fetch_or on an integer element. */
#define TL_ATOMIC_OR(DTYPE, T)                                                          \
  TL_ATOMIC_STORAGE int32_t tl_atomic_or_##DTYPE(T* address, T value) {                \
    __atomic_fetch_or(address, value, __ATOMIC_RELAXED);                                \
    return 0;                                                                           \
  }
TL_ATOMIC_OR(int32, int32_t)
TL_ATOMIC_OR(int64, int64_t)
TL_ATOMIC_OR(uint32, uint32_t)
TL_ATOMIC_OR(uint64, uint64_t)
/* T.atomic_load / T.atomic_store: the element's bits loaded or stored sequentially
   consistently (at least as strong as any memory_order asked); 16-bit floats travel
   as float, as the other 16-bit atomics. */
#define TL_ATOMIC_LOAD_STORE(DTYPE, T, BITS)                                            \
  TL_ATOMIC_STORAGE T tl_atomic_load_##DTYPE(T* address) {                              \
    BITS bits = __atomic_load_n((BITS*)address, __ATOMIC_SEQ_CST);                      \
    T value;                                                                            \
    __builtin_memcpy(&value, &bits, sizeof value);                                      \
    return value;                                                                       \
  }                                                                                     \
  TL_ATOMIC_STORAGE int32_t tl_atomic_store_##DTYPE(T* address, T value) {             \
    BITS bits;                                                                          \
    __builtin_memcpy(&bits, &value, sizeof bits);                                       \
    __atomic_store_n((BITS*)address, bits, __ATOMIC_SEQ_CST);                           \
    return 0;                                                                           \
  }
TL_ATOMIC_LOAD_STORE(float32, float, uint32_t)
TL_ATOMIC_LOAD_STORE(float64, double, uint64_t)
TL_ATOMIC_LOAD_STORE(int32, int32_t, uint32_t)
TL_ATOMIC_LOAD_STORE(int64, int64_t, uint64_t)
TL_ATOMIC_LOAD_STORE(uint32, uint32_t, uint32_t)
TL_ATOMIC_LOAD_STORE(uint64, uint64_t, uint64_t)
#define TL_ATOMIC_LOAD_STORE_HALF(DTYPE, TO_F32, FROM_F32)                              \
  TL_ATOMIC_STORAGE float tl_atomic_load_##DTYPE(void* address) {                       \
    return TO_F32(__atomic_load_n((uint16_t*)address, __ATOMIC_SEQ_CST));               \
  }                                                                                     \
  TL_ATOMIC_STORAGE int32_t tl_atomic_store_##DTYPE(void* address, float value) {      \
    __atomic_store_n((uint16_t*)address, FROM_F32(value), __ATOMIC_SEQ_CST);            \
    return 0;                                                                           \
  }
TL_ATOMIC_LOAD_STORE_HALF(float16, tl_atomic_f16_to_f32, tl_atomic_f32_to_f16)
TL_ATOMIC_LOAD_STORE_HALF(bfloat16, tl_atomic_bf16_to_f32, tl_atomic_f32_to_bf16)
