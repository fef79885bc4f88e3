"""Half-precision inputs on the C path: the CPU's own conversions in the GEMM micro-kernel.

gcc 12 does not vectorize ``(float)`` of a ``_Float16``: a loop converting fp16
elements to fp32 issues one scalar conversion per element (a software routine
in libgcc where the CPU lacks AVX-512 FP16), and the TIR-loop micro-kernel
then keeps its accumulators in memory. The fp16 GEMM on ``c`` ran about 100x
slower than on ``llvm`` (benchmarks/fp16_gemm_cpu.py).

`C_HALF_GEMM_PRELUDE` defines ``tl_gemm_f16_f32x{4,8,16}``: the
vector-extension micro-kernel of `gemm_microkernel` (same arguments, fp32
accumulators in registers) whose A and B tiles are fp16. B's rows are
converted a vector at a time and A's elements one at a time, by what the
compiling CPU offers, chosen by gcc's predefined macros under
``-march=native``: F16C's ``vcvtph2ps`` (``_mm_cvtph_ps``/``_mm256_cvtph_ps``,
AVX-512F's ``_mm512_cvtph_ps`` for 16 lanes, ``_cvtsh_ss`` for one element);
without F16C an exact integer conversion (sign, exponent rebias, subnormals
through an exact fp32 multiply, inf/NaN kept).

Widening fp16 to fp32 is exact, so results are bit-identical to the scalar
path; rounding back to fp16 (round to nearest even) happens where the kernel
stores fp16, unchanged. bf16 tiles keep the TIR loops: TVM's C path stores
block-local bf16 arrays as fp32 already (its bf16 legalization).
"""

from __future__ import annotations

#: The half-precision input formats the C micro-kernel takes: dtype -> name infix.
C_HALF_GEMM_DTYPES: dict[str, str] = {"float16": "f16"}

C_HALF_GEMM_PRELUDE = r"""
/* tl-codegen-cpu: fp16 -> fp32 conversions and the fp16-input GEMM micro-kernels. */
#include <immintrin.h>
#include <string.h>
static inline __attribute__((always_inline)) float tl_f16_to_f32(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
  float f;
  if (exponent == 0) {
    f = (float)mantissa * 0x1p-24f; /* zero or subnormal: exact in fp32 */
    memcpy(&bits, &f, 4);
    bits |= sign;
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13); /* inf, NaN */
  } else {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  memcpy(&f, &bits, 4);
  return f;
#endif
}
static inline __attribute__((always_inline)) tl_f32x4 tl_f16_to_f32x4(const uint16_t* p) {
  tl_f32x4 out;
#if defined(__F16C__)
  __m128 v = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i*)p));
  memcpy(&out, &v, sizeof out);
#else
  for (int i = 0; i < 4; ++i) out[i] = tl_f16_to_f32(p[i]);
#endif
  return out;
}
static inline __attribute__((always_inline)) tl_f32x8 tl_f16_to_f32x8(const uint16_t* p) {
  tl_f32x8 out;
#if defined(__F16C__)
  __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
  memcpy(&out, &v, sizeof out);
#else
  for (int i = 0; i < 8; ++i) out[i] = tl_f16_to_f32(p[i]);
#endif
  return out;
}
static inline __attribute__((always_inline)) tl_f32x16 tl_f16_to_f32x16(const uint16_t* p) {
  tl_f32x16 out;
#if defined(__AVX512F__)
  __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p));
  memcpy(&out, &v, sizeof out);
#else
  tl_f32x8 lo = tl_f16_to_f32x8(p), hi = tl_f16_to_f32x8(p + 8);
  memcpy(&out, &lo, sizeof lo);
  memcpy((char*)&out + sizeof lo, &hi, sizeof hi);
#endif
  return out;
}
#define TL_GEMM_HALF(KIND, LANES)                                                   \
static inline __attribute__((always_inline)) int32_t tl_gemm_##KIND##_f32x##LANES(  \
    int32_t rows, int32_t vectors, int32_t k, const void* a_data,                   \
    int32_t a_row_stride, int32_t a_k_stride, const void* b_data,                   \
    int32_t b_k_stride, float* c, int32_t c_row_stride) {                           \
  const uint16_t* a = (const uint16_t*)a_data;                                      \
  const uint16_t* b = (const uint16_t*)b_data;                                      \
  tl_f32x##LANES acc[TL_GEMM_MAX_ROWS][TL_GEMM_MAX_VECTORS];                        \
  _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r)                      \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                  \
      acc[r][v] = *(const tl_f32x##LANES*)(c + r * c_row_stride + v * LANES);      \
  for (int32_t kk = 0; kk < k; ++kk) {                                             \
    tl_f32x##LANES bv[TL_GEMM_MAX_VECTORS];                                        \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                  \
      bv[v] = tl_##KIND##_to_f32x##LANES(b + kk * b_k_stride + v * LANES);         \
    _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r) {                  \
      const float av = tl_##KIND##_to_f32(a[r * a_row_stride + kk * a_k_stride]);  \
      _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                \
        acc[r][v] += av * bv[v];                                                   \
    }                                                                              \
  }                                                                                \
  _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r)                      \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                  \
      *(tl_f32x##LANES*)(c + r * c_row_stride + v * LANES) = acc[r][v];            \
  return 0;                                                                        \
}
TL_GEMM_HALF(f16, 4)
TL_GEMM_HALF(f16, 8)
TL_GEMM_HALF(f16, 16)
"""
"""C definitions inserted after `gemm_microkernel.C_MICROKERNEL_PRELUDE` (they use its
``tl_f32x<lanes>`` types and limits) when the source calls a half-input micro-kernel."""
