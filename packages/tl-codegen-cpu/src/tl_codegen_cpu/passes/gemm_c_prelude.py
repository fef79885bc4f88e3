"""The C path's GEMM micro-kernel: ``tl_gemm_f32x{4,8,16}`` on GCC vector-extension types.

TVM's C printer cannot print vector types, so on target ``c`` the micro-kernel of
`gemm_microkernel` calls these always-inline C functions for its full fp32 register
tiles (``style="c-vector-extension"``); `c_patches` inserts the definitions when the
source calls them.
"""

from __future__ import annotations

#: Vector widths (fp32 lanes) the C prelude defines a micro-kernel for.
C_PRELUDE_LANES: tuple[int, ...] = (4, 8, 16)

#: The most rows / column vectors of a register tile the C prelude supports.
C_MAX_ROWS, C_MAX_VECTORS = 16, 4

#: C definitions of ``tl_gemm_f32x{4,8,16}(rows, vectors, k, a, a_row_stride,
#: a_k_stride, b, b_k_stride, c, c_row_stride)``: C[rows x vectors*lanes] +=
#: A @ B with GCC vector-extension accumulators. Always inlined with constant
#: rows/vectors, the unrolled loops leave every accumulator in a register.
C_MICROKERNEL_PRELUDE = (
    r"""
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
"""
    + f"#define TL_GEMM_MAX_ROWS {C_MAX_ROWS}\n#define TL_GEMM_MAX_VECTORS {C_MAX_VECTORS}\n"
    + "".join(f"TL_GEMM_F32({lanes})\n" for lanes in C_PRELUDE_LANES)
)


__all__ = ["C_MAX_ROWS", "C_MAX_VECTORS", "C_MICROKERNEL_PRELUDE", "C_PRELUDE_LANES"]
