
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
static inline __attribute__((always_inline)) int32_t tl_cvt_f16_to_f32(
    const void* src, float* dst, int32_t n) {
  const uint16_t* s = (const uint16_t*)src;
  int32_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(s + i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(s + i))));
#endif
  for (; i < n; ++i) dst[i] = tl_f16_to_f32(s[i]);
  return 0;
}
/* dst[r * dst_stride + c] = (float)src[c * src_stride + r] for r < rows, c < cols: a
   tile stored transposed, widened (fp16) or copied (fp32) into a row-major fp32 one
   (T.gemm's transposed operands). With AVX (F16C for fp16), 8 x 8 blocks: 8 source rows
   loaded (and widened by vcvtph2ps), transposed in registers (24 shuffles), stored as 8
   destination rows. The block's loops carry unroll pragmas: the C flags turn gcc's
   complete unrolling off (--param=max-completely-peeled-insns=0), and a rolled loop keeps
   v, t and u in memory (a 16 x 128 x 32 stream-k GEMM spent 20 of its 56 ms here). */
#define TL_TRANSPOSE_TO_F32(NAME, TYPE, ENABLED, LOAD8, LOAD1)                          \
static inline __attribute__((always_inline)) int32_t NAME(                              \
    const void* src, int32_t src_stride, float* dst, int32_t dst_stride, int32_t rows,  \
    int32_t cols) {                                                                      \
  const TYPE* s = (const TYPE*)src;                                                      \
  int32_t r0 = 0;                                                                        \
  if (ENABLED) {                                                                         \
    for (; r0 + 8 <= rows; r0 += 8) {                                                    \
      int32_t c0 = 0;                                                                    \
      for (; c0 + 8 <= cols; c0 += 8) {                                                  \
        __m256 v[8], t[8], u[8];                                                         \
        _Pragma("GCC unroll 8")                                                          \
        for (int i = 0; i < 8; ++i) v[i] = LOAD8(s + (c0 + i) * src_stride + r0);        \
        _Pragma("GCC unroll 4")                                                          \
        for (int i = 0; i < 8; i += 2) {                                                 \
          t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);                                     \
          t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);                                 \
        }                                                                                \
        _Pragma("GCC unroll 2")                                                          \
        for (int i = 0; i < 8; i += 4) {                                                 \
          u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));             \
          u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));         \
          u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));     \
          u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));     \
        }                                                                                \
        _Pragma("GCC unroll 4")                                                          \
        for (int i = 0; i < 4; ++i) {                                                    \
          _mm256_storeu_ps(dst + (r0 + i) * dst_stride + c0,                             \
                           _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));                \
          _mm256_storeu_ps(dst + (r0 + i + 4) * dst_stride + c0,                         \
                           _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));                \
        }                                                                                \
      }                                                                                  \
      for (; c0 < cols; ++c0)                                                            \
        for (int32_t r = r0; r < r0 + 8; ++r)                                            \
          dst[r * dst_stride + c0] = LOAD1(s[c0 * src_stride + r]);                      \
    }                                                                                    \
  }                                                                                      \
  for (int32_t r = r0; r < rows; ++r)                                                    \
    for (int32_t c = 0; c < cols; ++c) dst[r * dst_stride + c] = LOAD1(s[c * src_stride + r]); \
  return 0;                                                                              \
}
#if defined(__F16C__)
#define TL_F16C_ENABLED 1
#define TL_LOAD8_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(p)))
#else
#define TL_F16C_ENABLED 0
#define TL_LOAD8_F16(p) _mm256_setzero_ps()
#endif
#if defined(__AVX__)
#define TL_AVX_ENABLED 1
#define TL_LOAD8_F32(p) _mm256_loadu_ps(p)
#else
#define TL_AVX_ENABLED 0
#define TL_LOAD8_F32(p) _mm256_setzero_ps()
#endif
#define TL_LOAD1_F32(x) (x)
TL_TRANSPOSE_TO_F32(tl_cvt_f16_to_f32_t, uint16_t, TL_F16C_ENABLED, TL_LOAD8_F16, tl_f16_to_f32)
TL_TRANSPOSE_TO_F32(tl_transpose_f32, float, TL_AVX_ENABLED, TL_LOAD8_F32, TL_LOAD1_F32)
static inline __attribute__((always_inline)) int32_t tl_cvt_f32_to_f16(
    const float* src, void* dst, int32_t n) {
  uint16_t* d = (uint16_t*)dst;
  int32_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i*)(d + i),
        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i*)(d + i),
        _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) {
    _Float16 h = (_Float16)src[i]; /* gcc: round to nearest even */
    memcpy(d + i, &h, 2);
  }
  return 0;
}
#define TL_GEMM_HALF(KIND, LANES)                                                   \
static inline __attribute__((always_inline)) int32_t tl_gemm_##KIND##_f32x##LANES(  \
    int32_t rows, int32_t vectors, int32_t k, const void* a_data,                   \
    int32_t a_row_stride, int32_t a_k_stride, const void* b_data,                   \
    int32_t b_k_stride, float* c, int32_t c_row_stride) {                           \
  const uint16_t* a = (const uint16_t*)a_data;                                      \
  const uint16_t* b = (const uint16_t*)b_data;                                      \
  /* A's rows widened once per call (8 lanes at a time when contiguous), so the    \
     k loop broadcasts fp32 from memory as the fp32 kernel does. */                 \
  float a32[TL_GEMM_MAX_ROWS][k];                                                   \
  for (int32_t r = 0; r < rows; ++r) {                                              \
    int32_t kk = 0;                                                                 \
    if (a_k_stride == 1)                                                            \
      for (; kk + 8 <= k; kk += 8) {                                                \
        tl_f32x8 w = tl_f16_to_f32x8(a + r * a_row_stride + kk);                    \
        memcpy(&a32[r][kk], &w, sizeof w);                                          \
      }                                                                             \
    for (; kk < k; ++kk)                                                            \
      a32[r][kk] = tl_f16_to_f32(a[r * a_row_stride + kk * a_k_stride]);            \
  }                                                                                 \
  tl_f32x##LANES acc[TL_GEMM_MAX_ROWS][TL_GEMM_MAX_VECTORS];                        \
  _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r)                      \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                  \
      acc[r][v] = *(const tl_f32x##LANES*)(c + r * c_row_stride + v * LANES);      \
  for (int32_t kk = 0; kk < k; ++kk) {                                             \
    tl_f32x##LANES bv[TL_GEMM_MAX_VECTORS];                                        \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                  \
      bv[v] = tl_##KIND##_to_f32x##LANES(b + kk * b_k_stride + v * LANES);         \
    _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r) {                  \
      const float av = a32[r][kk];                                                 \
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
/* Products rounded to fp16, as a program multiplying fp16 operands says, then added in
   fp32: tl_f16r_mul_f32x<LANES>(a, b) = (float)(_Float16)(a * b[i]) per lane. An fp16
   product is exact in fp32, so one rounding of it equals fp16 multiplication:
   AVX-512-FP16's vmulph rounds 16 products in one instruction; elsewhere the fp32
   products go through the fp16 conversion (vcvtps2ph, round to nearest even). */
#if defined(__AVX512FP16__) && defined(__AVX512VL__)
typedef __m128h tl_f16r_b4;
typedef __m128h tl_f16r_b8;
typedef __m256h tl_f16r_b16;
#define TL_F16R_LOAD4(p) _mm_castsi128_ph(_mm_loadl_epi64((const __m128i*)(p)))
#define TL_F16R_LOAD8(p) _mm_castsi128_ph(_mm_loadu_si128((const __m128i*)(p)))
#define TL_F16R_LOAD16(p) _mm256_castsi256_ph(_mm256_loadu_si256((const __m256i*)(p)))
static inline __attribute__((always_inline)) tl_f32x4 tl_f16r_mul_f32x4(_Float16 a, tl_f16r_b4 b) {
  tl_f32x4 out; __m128 w = _mm_cvtxph_ps(_mm_mul_ph(_mm_set1_ph(a), b));
  memcpy(&out, &w, sizeof out); return out;
}
static inline __attribute__((always_inline)) tl_f32x8 tl_f16r_mul_f32x8(_Float16 a, tl_f16r_b8 b) {
  tl_f32x8 out; __m256 w = _mm256_cvtxph_ps(_mm_mul_ph(_mm_set1_ph(a), b));
  memcpy(&out, &w, sizeof out); return out;
}
static inline __attribute__((always_inline)) tl_f32x16 tl_f16r_mul_f32x16(_Float16 a, tl_f16r_b16 b) {
  tl_f32x16 out; __m512 w = _mm512_cvtxph_ps(_mm256_mul_ph(_mm256_set1_ph(a), b));
  memcpy(&out, &w, sizeof out); return out;
}
#else
typedef tl_f32x4 tl_f16r_b4;
typedef tl_f32x8 tl_f16r_b8;
typedef tl_f32x16 tl_f16r_b16;
#define TL_F16R_LOAD4(p) tl_f16_to_f32x4(p)
#define TL_F16R_LOAD8(p) tl_f16_to_f32x8(p)
#define TL_F16R_LOAD16(p) tl_f16_to_f32x16(p)
static inline __attribute__((always_inline)) tl_f32x4 tl_f16r_mul_f32x4(_Float16 a, tl_f32x4 b) {
  tl_f32x4 p = (float)a * b;
#if defined(__F16C__)
  __m128 v; memcpy(&v, &p, sizeof v);
  v = _mm_cvtph_ps(_mm_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  memcpy(&p, &v, sizeof p);
#else
  for (int i = 0; i < 4; ++i) p[i] = (float)(_Float16)p[i];
#endif
  return p;
}
static inline __attribute__((always_inline)) tl_f32x8 tl_f16r_mul_f32x8(_Float16 a, tl_f32x8 b) {
  tl_f32x8 p = (float)a * b;
#if defined(__F16C__)
  __m256 v; memcpy(&v, &p, sizeof v);
  v = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  memcpy(&p, &v, sizeof p);
#else
  for (int i = 0; i < 8; ++i) p[i] = (float)(_Float16)p[i];
#endif
  return p;
}
static inline __attribute__((always_inline)) tl_f32x16 tl_f16r_mul_f32x16(_Float16 a, tl_f32x16 b) {
  tl_f32x16 p = (float)a * b;
#if defined(__AVX512F__)
  __m512 v; memcpy(&v, &p, sizeof v);
  v = _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  memcpy(&p, &v, sizeof p);
#else
  for (int i = 0; i < 16; ++i) p[i] = (float)(_Float16)p[i];
#endif
  return p;
}
#endif
#define TL_GEMM_F16R(LANES)                                                          \
static inline __attribute__((always_inline)) int32_t tl_gemm_f16r_f32x##LANES(       \
    int32_t rows, int32_t vectors, int32_t k, const void* a_data,                    \
    int32_t a_row_stride, int32_t a_k_stride, const void* b_data,                    \
    int32_t b_k_stride, float* c, int32_t c_row_stride) {                            \
  const _Float16* a = (const _Float16*)a_data;                                       \
  const uint16_t* b = (const uint16_t*)b_data;                                       \
  tl_f32x##LANES acc[TL_GEMM_MAX_ROWS][TL_GEMM_MAX_VECTORS];                         \
  _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r)                       \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                   \
      acc[r][v] = *(const tl_f32x##LANES*)(c + r * c_row_stride + v * LANES);       \
  for (int32_t kk = 0; kk < k; ++kk) {                                              \
    tl_f16r_b##LANES bv[TL_GEMM_MAX_VECTORS];                                       \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                   \
      bv[v] = TL_F16R_LOAD##LANES(b + kk * b_k_stride + v * LANES);                 \
    _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r) {                   \
      const _Float16 av = a[r * a_row_stride + kk * a_k_stride];                    \
      _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                 \
        acc[r][v] += tl_f16r_mul_f32x##LANES(av, bv[v]);                            \
    }                                                                               \
  }                                                                                 \
  _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r)                       \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                   \
      *(tl_f32x##LANES*)(c + r * c_row_stride + v * LANES) = acc[r][v];             \
  return 0;                                                                         \
}
TL_GEMM_F16R(4)
TL_GEMM_F16R(8)
TL_GEMM_F16R(16)
