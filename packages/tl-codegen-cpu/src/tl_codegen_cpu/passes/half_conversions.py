"""Half-precision inputs on the C path: the CPU's own conversions in the GEMM micro-kernel.

gcc 12 does not vectorize ``(float)`` of a ``_Float16``: a loop converting fp16
elements to fp32 issues one scalar conversion per element (``vcvtph2ps`` /
``vcvtsh2ss``), and the TIR-loop micro-kernel then keeps its accumulators in
memory. The fp16 GEMM on ``c`` ran about 100x slower than on ``llvm``
(benchmarks/fp16_gemm_cpu.py).

`C_HALF_GEMM_PRELUDE` defines ``tl_gemm_f16_f32x{4,8,16}``: the
vector-extension micro-kernel of `gemm_microkernel` (same arguments, fp32
accumulators in registers) whose A and B tiles are fp16. B's rows are
converted a vector at a time and A's elements one at a time, by what the
compiling CPU offers, chosen by gcc's predefined macros under
``-march=native``: F16C's ``vcvtph2ps`` (``_mm_cvtph_ps``/``_mm256_cvtph_ps``,
AVX-512F's ``_mm512_cvtph_ps`` for 16 lanes, ``_cvtsh_ss`` for one element);
without F16C an exact integer conversion (sign, exponent rebias, subnormals
through an exact fp32 multiply, inf/NaN kept).

`cpu-call-half-conversions` (`c` only) turns every loop that only converts
a contiguous row between fp16 and fp32 (``dst[i] = float(src[i])`` or
``dst[i] = half(src[i])``: the widening of GEMM operands, fp32 results stored
as fp16) into a call of ``tl_cvt_f16_to_f32`` / ``tl_cvt_f32_to_f16``, which
convert 16 (AVX-512F) or 8 (F16C) elements per instruction; the narrowing
rounds to nearest even (``_MM_FROUND_TO_NEAREST_INT``), as gcc's scalar
conversion and numpy do.

Widening fp16 to fp32 is exact, so results are bit-identical to the scalar
path; rounding back to fp16 (round to nearest even) happens where the kernel
stores fp16, unchanged. bf16 tiles keep the TIR loops: TVM's C path stores
block-local bf16 arrays as fp32 already (its bf16 legalization).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass

#: The half-precision input formats the C micro-kernel takes: dtype -> name infix.
C_HALF_GEMM_DTYPES: dict[str, str] = {"float16": "f16"}

#: Operand dtypes whose products the C micro-kernel rounds to that dtype before adding
#: them in fp32 (``tl_gemm_f16r_f32x<lanes>``): dtype -> name infix.
C_HALF_PRODUCT_DTYPES: dict[str, str] = {"float16": "f16r"}

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
   destination rows. */
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
        for (int i = 0; i < 8; ++i) v[i] = LOAD8(s + (c0 + i) * src_stride + r0);        \
        for (int i = 0; i < 8; i += 2) {                                                 \
          t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);                                     \
          t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);                                 \
        }                                                                                \
        for (int i = 0; i < 8; i += 4) {                                                 \
          u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));             \
          u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));         \
          u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));     \
          u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));     \
        }                                                                                \
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
@F16R_FALLBACK_FUNCTIONS@#endif
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
"""


def _f16r_fallback(lanes: int, prefix: str, vector: str, guard: str) -> str:
    """``tl_f16r_mul_f32x<lanes>`` without AVX-512-FP16: fp32 products rounded to fp16
    through the hardware conversion where ``guard`` holds, else one lane at a time."""
    return f"""static inline __attribute__((always_inline)) tl_f32x{lanes} tl_f16r_mul_f32x{lanes}(_Float16 a, tl_f32x{lanes} b) {{
  tl_f32x{lanes} p = (float)a * b;
#if defined({guard})
  {vector} v; memcpy(&v, &p, sizeof v);
  v = {prefix}_cvtph_ps({prefix}_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  memcpy(&p, &v, sizeof p);
#else
  for (int i = 0; i < {lanes}; ++i) p[i] = (float)(_Float16)p[i];
#endif
  return p;
}}
"""


C_HALF_GEMM_PRELUDE = C_HALF_GEMM_PRELUDE.replace(
    "@F16R_FALLBACK_FUNCTIONS@",
    _f16r_fallback(4, "_mm", "__m128", "__F16C__")
    + _f16r_fallback(8, "_mm256", "__m256", "__F16C__")
    + _f16r_fallback(16, "_mm512", "__m512", "__AVX512F__"),
)
"""C definitions inserted after `gemm_microkernel.C_MICROKERNEL_PRELUDE` (they use its
``tl_f32x<lanes>`` types and limits) when the source calls a half-input micro-kernel
or a ``tl_cvt_*`` conversion."""

#: (source dtype, destination dtype) -> the C function converting a contiguous row.
ROW_CONVERSIONS: dict[tuple[str, str], str] = {
    ("float16", "float32"): "tl_cvt_f16_to_f32",
    ("float32", "float16"): "tl_cvt_f32_to_f16",
}

#: Rows shorter than this stay loops (a call does not pay for itself).
_MIN_ROW = 8


def _row_start(indices: Any, var: Any) -> list[Any] | None:
    """``indices`` with the loop Var at 0 when only the last index moves with it, by 1."""
    *outer, last = list(indices)
    if any(uses_var(i, var) for i in outer):
        return None
    if isinstance(last, tvm.ir.Var) and last.same_as(var):
        base: Any = tirx.const(0, "int32")
    elif isinstance(last, tirx.Add) and isinstance(last.b, tvm.ir.Var) and last.b.same_as(var):
        base = last.a
    elif isinstance(last, tirx.Add) and isinstance(last.a, tvm.ir.Var) and last.a.same_as(var):
        base = last.b
    else:
        # Any other index linear in the loop variable with step 1 (``chunk * 16 + i + 32``).
        analyzer = tvm.sym.Analyzer()
        zero = tirx.const(0, str(var.dtype))
        base = analyzer.simplify(substitute_vars(tirx.Evaluate(last), {var: zero}).value)
        step = analyzer.simplify(last - base)
        if not (isinstance(step, tvm.ir.Var) and step.same_as(var)):
            return None
    return None if uses_var(base, var) else [*outer, base]


def uses_var(expr: Any, var: Any) -> bool:
    """Whether ``expr`` refers to ``var``."""
    found = False

    def visit(v: Any) -> None:
        nonlocal found
        if v.same_as(var):
            found = True

    tvm_ffi.structural_walk(expr, (tvm.ir.Var, visit), order="post")
    return found


def conversion_call(loop: Any) -> Any | None:
    """The ``tl_cvt_*`` call replacing ``loop``, or None when it is not a contiguous
    fp16 <-> fp32 conversion of one row starting at the loop's minimum."""
    store = loop.body
    if not isinstance(store, tirx.BufferStore) or not isinstance(store.value, tirx.Cast):
        return None
    load = store.value.value
    if not isinstance(load, tvm.ir.TensorLoad):
        return None
    name = ROW_CONVERSIONS.get((str(load.source.dtype), str(store.buffer.dtype)))
    extent = loop.extent
    if name is None or not isinstance(extent, tirx.IntImm) or int(extent.value) < _MIN_ROW:
        return None
    if load.source.strides or store.buffer.strides or not _is_zero(loop.min):
        return None
    src, dst = _row_start(load.indices, loop.loop_var), _row_start(store.indices, loop.loop_var)
    if src is None or dst is None:
        return None
    # Access pointers carry the row's extent: TVM sizes block-local arrays by the
    # regions their accesses cover (an address_of covers one element).
    return tirx.Evaluate(
        tirx.call_extern(
            "int32",
            name,
            load.source.access_ptr("r", offset=_flat(load.source, src), extent=extent),
            store.buffer.access_ptr("w", offset=_flat(store.buffer, dst), extent=extent),
            extent,
        )
    )


#: Source dtype -> the C function copying a transposed tile into a row-major fp32 one.
TRANSPOSES: dict[str, str] = {"float16": "tl_cvt_f16_to_f32_t", "float32": "tl_transpose_f32"}


def transpose_call(buffer: Any, offset: list[Any], packed: Any, rows: int, cols: int) -> Any:
    """The C call setting ``packed[r, c] = float(buffer tile[c, r])`` for the
    ``[cols, rows]`` tile of ``buffer`` (fp16 or fp32, unstrided) at ``offset``:
    8 x 8 register blocks (`TRANSPOSES`) instead of a strided gather of one
    element at a time, which gcc does not vectorize."""
    pitch = buffer.shape[-1]
    span = (cols - 1) * pitch + rows
    return tirx.Evaluate(
        tirx.call_extern(
            "int32",
            TRANSPOSES[str(buffer.dtype)],
            buffer.access_ptr("r", offset=_flat(buffer, offset), extent=span),
            pitch,
            packed.access_ptr("w", offset=0, extent=rows * cols),
            cols,
            rows,
            cols,
        )
    )


def _flat(buffer: Any, indices: list[Any]) -> Any:
    offset: Any = None
    for extent, index in zip(buffer.shape, indices, strict=True):
        offset = index if offset is None else offset * extent + index
    return offset


def _is_zero(value: Any) -> bool:
    return isinstance(value, tirx.IntImm) and int(value.value) == 0


@dataclass(frozen=True)
class CpuCallHalfConversionsPass(PrimFuncPass):
    """Row conversions between fp16 and fp32 become ``tl_cvt_*`` calls (``c`` only;
    see the module docstring)."""

    name: ClassVar[str] = "cpu-call-half-conversions"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its contiguous fp16 <-> fp32 row loops replaced by calls."""

        def rewrite(loop: Any) -> Any:
            call = conversion_call(loop)
            return loop if call is None else call

        result: tirx.Stmt = tvm_ffi.structural_map(body, (tirx.For, rewrite), order="post")
        return result
