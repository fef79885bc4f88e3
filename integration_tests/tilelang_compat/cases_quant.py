"""Cases from TileLang's quantization examples: fp8 casts, int4/fp4 dequantizing GEMMs
and the int4 dequantizing GEMV (classic and eager style)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case

_FP8_MAX = 448.0
_FP8_ARCH = "sm_89"  # the first arch with fp8 conversions; the corpus's sm_80 refuses them
_GROUP = 128  # the cast examples' fixed group size along N
_BATCH_SIZES = (5, 16)
"""Rows per group of the split-token cast; the last group ends at X's last row (M_max 16),
so no block reads past X."""


def _per_token_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    x = rng.standard_normal((a["M"], a["N"])).astype(np.float32)
    x[0, :_GROUP] = 0.0  # an all-zero group: its scale is clamped to 1e-4 / 448
    return [x]


def _group_quant(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row, per-128-column fp8 quantization in float32 (the kernels' arithmetic)."""
    m, n = x.shape
    groups = x.reshape(m, n // _GROUP, _GROUP)
    amax = np.maximum(np.abs(groups).max(axis=2), np.float32(1e-4))
    scale = (amax / np.float32(_FP8_MAX)).astype(np.float32)
    q = np.clip(groups / scale[:, :, None], -_FP8_MAX, _FP8_MAX).astype(np.float32)
    return q.reshape(m, n).astype(ml_dtypes.float8_e4m3fn), scale


def _per_token_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return list(_group_quant(x))


def _group_split_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    sizes = np.array(_BATCH_SIZES, np.int32)
    x = rng.standard_normal((int(sizes.sum()), a["N"])).astype(ml_dtypes.bfloat16)
    return [x, sizes]


def _group_split_ref(a: dict[str, Any], x: np.ndarray, sizes: np.ndarray) -> Arrays:
    """Group g's rows start at sum(sizes[:g]); rows past its size are written as zeros
    (scale 0, fp8 0)."""
    m_max, n = a["M_max"], a["N"]
    x_fp8 = np.zeros((len(sizes), m_max, n), ml_dtypes.float8_e4m3fn)
    amax = np.zeros((len(sizes), m_max, n // _GROUP), np.float32)
    offset = 0
    for g, size in enumerate(sizes):
        q, s = _group_quant(x[offset : offset + size].astype(np.float32))
        x_fp8[g, :size], amax[g, :size] = q, s
        offset += size
    return [x_fp8, amax]


def _packed(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Two 4-bit codes per byte, every code value present."""
    return rng.integers(0, 256, (rows, cols // 2), dtype=np.uint8)


def _nibbles(packed: np.ndarray) -> np.ndarray:
    """Low nibble first, as the kernels index ``j // 2`` and shift by ``(j % 2) * 4``."""
    return np.stack((packed & 0x0F, packed >> 4), axis=-1).reshape(packed.shape[0], -1)


def _fp4_to_f16(packed: np.ndarray) -> np.ndarray:
    """The example's s1e2m1 decoding: sign, exponent + 14, one mantissa bit (no zero case)."""
    f4 = _nibbles(packed).astype(np.uint16)
    bits = ((((f4 & 6) >> 1) + 14) | ((f4 >> 3) << 5)) << 10 | (f4 & 1) << 9
    return bits.astype(np.uint16).view(np.float16)


def _int4_to_int8(packed: np.ndarray) -> np.ndarray:
    """Each nibble sign-extended (two's complement int4)."""
    return ((_nibbles(packed).astype(np.int16) << 12) >> 12).astype(np.int8)


def _convert_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [_packed(rng, a["N"], a["K"])]


def _fp4_convert_ref(a: dict[str, Any], b: np.ndarray) -> Arrays:
    return [_fp4_to_f16(b)]


def _i4_convert_ref(a: dict[str, Any], b: np.ndarray) -> Arrays:
    return [_int4_to_int8(b)]


def _fp4_gemm_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [
        (rng.standard_normal((a["M"], a["K"])) / 4).astype(np.float16),
        _packed(rng, a["N"], a["K"]),
    ]


def _fp4_gemm_ref(a: dict[str, Any], x: np.ndarray, b: np.ndarray) -> Arrays:
    product = _fp4_to_f16(b).astype(np.float32) @ x.astype(np.float32).T
    return [product.astype(np.float16)]  # Ct: (N, M)


def _w4a8_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [rng.integers(-128, 128, (a["M"], a["K"]), dtype=np.int8), _packed(rng, a["N"], a["K"])]


def _w4a8_ref(a: dict[str, Any], x: np.ndarray, b: np.ndarray) -> Arrays:
    return [_int4_to_int8(b).astype(np.int32) @ x.astype(np.int32).T]  # Ct: (N, M)


def _gemv_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [
        rng.uniform(0, 1, (a["M"], a["K"])).astype(np.float16),
        _packed(rng, a["N"], a["K"]).view(np.int8),
        np.zeros((a["M"], a["N"]), np.float16),
    ]


def _gemv_ref(a: dict[str, Any], x: np.ndarray, b: np.ndarray, _c: np.ndarray) -> Arrays:
    """The non-fast-decoding path widens each nibble to int32 and sign-extends it
    (``<< 28 >> 28``), so the codes are signed int4 whatever ``source_format`` says."""
    weights = _int4_to_int8(b.view(np.uint8)).astype(np.float32)
    return [(x.astype(np.float32) @ weights.T).astype(np.float16)]


def _interleave_u4_for_f16(packed: np.ndarray) -> np.ndarray:
    """TileLang's ``interleave_weight(qweight, 4, "float16")`` (quantize/utils.py): within
    each 32-bit word, code ``i`` moves to bit ``(i % 2) * 16 + (i // 2) * 4``, the order the
    lop3 decoder reads two halves at a time in."""
    words = np.ascontiguousarray(packed).view(np.uint32)
    out = np.zeros_like(words)
    for code in range(8):
        shift = (code % 2) * 16 + (code // 2) * 4
        out |= ((words >> np.uint32(4 * code)) & np.uint32(0xF)) << np.uint32(shift)
    return out.view(np.int8)


def _fast_gemv_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    x, packed, c = _gemv_inputs(a, rng)
    return [x, _interleave_u4_for_f16(packed.view(np.uint8)), c]


def _fast_gemv_ref(a: dict[str, Any], x: np.ndarray, b: np.ndarray, _c: np.ndarray) -> Arrays:
    """The lop3 decoder reads the interleaved codes as unsigned 4-bit values."""
    words = np.ascontiguousarray(b).view(np.uint32)
    codes = np.zeros((*words.shape, 8), np.uint32)
    for code in range(8):
        shift = (code % 2) * 16 + (code // 2) * 4
        codes[..., code] = (words >> np.uint32(shift)) & np.uint32(0xF)
    weights = codes.reshape(b.shape[0], -1).astype(np.float32)
    return [(x.astype(np.float32) @ weights.T).astype(np.float16)]


_FP4_SOURCE = "examples/dequantize_gemm/example_dequant_gemm_fp4_hopper.py@a35008a42"
_W4A8_SOURCE = "examples/dequantize_gemm/example_dequant_gemm_w4a8.py@a35008a42"
_CONVERT = {"N": 64, "K": 128, "block_N": 32, "block_K": 64}
_QUANT_GEMM = {"M": 64, "N": 64, "K": 256, "block_M": 64, "block_N": 64, "block_K": 128}

CASES = [
    Case(
        "example_per_token_cast_to_fp8.per_token_cast_to_fp8",
        "examples/cast/example_per_token_cast_to_fp8.py@a35008a42",
        "example_per_token_cast_to_fp8:per_token_cast_to_fp8",
        {"M": 16, "N": 256, "blk_m": 8},
        _per_token_inputs,
        _per_token_ref,
        out_idx=[1, 2],
        rtol=1e-6,
        atol=0,
        cuda_arch=_FP8_ARCH,
    ),
    Case(
        "example_group_per_split_token_cast_to_fp8.group_per_split_token_cast_to_fp8",
        "examples/cast/example_group_per_split_token_cast_to_fp8.py@a35008a42",
        "example_group_per_split_token_cast_to_fp8:group_per_split_token_cast_to_fp8",
        {"M": sum(_BATCH_SIZES), "N": 256, "BG": len(_BATCH_SIZES), "M_max": 16, "blk_m": 8},
        _group_split_inputs,
        _group_split_ref,
        out_idx=[2, 3],
        rtol=1e-6,
        atol=0,
        cuda_arch=_FP8_ARCH,
    ),
    Case(
        "example_dequant_gemm_fp4_hopper.test_convert",
        _FP4_SOURCE,
        "example_dequant_gemm_fp4_hopper:test_convert",
        {**_CONVERT, "in_dtype": "float16"},
        _convert_inputs,
        _fp4_convert_ref,
        rtol=0,
        atol=0,
    ),
    Case(
        "example_dequant_gemm_fp4_hopper.matmul",
        _FP4_SOURCE,
        "example_dequant_gemm_fp4_hopper:matmul",
        {
            **_QUANT_GEMM,
            "in_dtype": "float16",
            "out_dtype": "float16",
            "accum_dtype": "float32",
            "num_stages": 1,
            "threads": 128,
        },
        _fp4_gemm_inputs,
        _fp4_gemm_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_dequant_gemm_w4a8._convert_test",
        _W4A8_SOURCE,
        "example_dequant_gemm_w4a8:_convert_test",
        {**_CONVERT, "in_dtype": "int8"},
        _convert_inputs,
        _i4_convert_ref,
        rtol=0,
        atol=0,
    ),
    Case(
        "example_dequant_gemm_w4a8.matmul_int8xint4",
        _W4A8_SOURCE,
        "example_dequant_gemm_w4a8:matmul_int8xint4",
        {
            **_QUANT_GEMM,
            "in_dtype": "int8",
            "out_dtype": "int32",
            "accum_dtype": "int32",
            "num_stages": 1,
            "threads": 128,
        },
        _w4a8_inputs,
        _w4a8_ref,
        rtol=0,
        atol=0,
    ),
    Case(
        "example_dequant_gemv_fp16xint4.dequantize_gemv",
        "examples/dequantize_gemm/example_dequant_gemv_fp16xint4.py@a35008a42",
        "example_dequant_gemv_fp16xint4:dequantize_gemv",
        {
            "M": 1,
            "N": 64,
            "K": 512,
            "in_dtype": "float16",
            "out_dtype": "float16",
            "accum_dtype": "float32",
        },
        _gemv_inputs,
        _gemv_ref,
        inplace=[2],
        rtol=1e-2,
        atol=5e-2,
    ),
    Case(
        "example_dequant_gemv_fp16xint4.dequantize_gemv-fast-decoding",
        "examples/dequantize_gemm/example_dequant_gemv_fp16xint4.py@a35008a42",
        "example_dequant_gemv_fp16xint4:dequantize_gemv",
        {
            "M": 1,
            "N": 64,
            "K": 512,
            "in_dtype": "float16",
            "out_dtype": "float16",
            "accum_dtype": "float32",
            "fast_decoding": True,
        },
        _fast_gemv_inputs,
        _fast_gemv_ref,
        inplace=[2],
        rtol=1e-2,
        atol=5e-2,
    ),
]
