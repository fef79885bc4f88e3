
/* tl-codegen-cpu GEMM micro-kernel (GCC vector extensions). */
#define TL_GEMM_F32(LANES)                                                        \
typedef float tl_f32x##LANES                                                      \
    __attribute__((vector_size(LANES * 4), aligned(4), may_alias));               \
static inline __attribute__((always_inline)) int32_t tl_gemm_f32x##LANES(          \
    int32_t rows, int32_t vectors, int32_t k, const float* a, int32_t a_row_stride,\
    int32_t a_k_stride, const float* b, int32_t b_k_stride, float* c,              \
    int32_t c_row_stride) {                                                        \
  tl_f32x##LANES acc[TL_GEMM_MAX_ROWS][TL_GEMM_MAX_VECTORS];                       \
  _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r)                     \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                 \
      acc[r][v] = *(const tl_f32x##LANES*)(c + r * c_row_stride + v * LANES);     \
  for (int32_t kk = 0; kk < k; ++kk) {                                            \
    tl_f32x##LANES bv[TL_GEMM_MAX_VECTORS];                                       \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                 \
      bv[v] = *(const tl_f32x##LANES*)(b + kk * b_k_stride + v * LANES);          \
    _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r) {                 \
      const float av = a[r * a_row_stride + kk * a_k_stride];                     \
      _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)               \
        acc[r][v] += av * bv[v];                                                  \
    }                                                                             \
  }                                                                               \
  _Pragma("GCC unroll 16") for (int32_t r = 0; r < rows; ++r)                     \
    _Pragma("GCC unroll 4") for (int32_t v = 0; v < vectors; ++v)                 \
      *(tl_f32x##LANES*)(c + r * c_row_stride + v * LANES) = acc[r][v];           \
  return 0;                                                                       \
}
#define TL_GEMM_MAX_ROWS 16
#define TL_GEMM_MAX_VECTORS 4
TL_GEMM_F32(4)
TL_GEMM_F32(8)
TL_GEMM_F32(16)
