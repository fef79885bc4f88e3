"""GEMM and GEMV cases of the corpus (kernel/, cpu/ and language/ test files of TileLang)."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case

_K = "testing/python/kernel/"
_L = "testing/python/language/"


def _randn(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _gemm_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    a_shape = (a["K"], a["M"]) if a.get("trans_A") else (a["M"], a["K"])
    b_shape = (a["N"], a["K"]) if a.get("trans_B") else (a["K"], a["N"])
    dtype = str(a.get("in_dtype", a.get("dtype", "float16")))
    return [_randn(rng, a_shape, dtype), _randn(rng, b_shape, dtype)]


def _gemm_reference(a: dict[str, Any], x: np.ndarray, y: np.ndarray) -> Arrays:
    x = x.astype(np.float32).T if a.get("trans_A") else x.astype(np.float32)
    y = y.astype(np.float32).T if a.get("trans_B") else y.astype(np.float32)
    dtype = str(a.get("out_dtype", a.get("dtype", "float16")))
    return [(x @ y).astype(dtype)]


def _gemm_nt_reference(a: dict[str, Any], x: np.ndarray, y: np.ndarray) -> Arrays:
    return _gemm_reference({**a, "trans_B": True}, x, y)


def _gemm_nt_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return _gemm_inputs({**a, "trans_B": True}, rng)


_GEMM = {"M": 64, "N": 64, "K": 64, "block_M": 32, "block_N": 32, "block_K": 32}
_KERNEL_GEMM = {
    **_GEMM,
    "trans_A": False,
    "trans_B": False,
    "in_dtype": "float16",
    "out_dtype": "float16",
    "accum_dtype": "float32",
    "num_stages": 2,
    "threads": 128,
}
_FP16 = {"rtol": 1e-2, "atol": 1e-2}


def _batched_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, m, n, k = a["batch"], a["M"], a["N"], a["K"]
    return [_randn(rng, (b, m, k), "float16"), _randn(rng, (b, k, n), "float16")]


def _batched_reference(a: dict[str, Any], x: np.ndarray, y: np.ndarray) -> Arrays:
    return [np.matmul(x.astype(np.float32), y.astype(np.float32)).astype(np.float16)]


def _gemv_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    m, n, k = a["M"], a["N"], a["K"]
    return [
        _randn(rng, (m, k), "float16"),
        _randn(rng, (n, k), "float16"),
        _randn(rng, (n,), "float16"),
        np.zeros((m, n), np.float16),
    ]


def _gemv_reference(a: dict[str, Any], x: np.ndarray, w: np.ndarray, bias: Any, c: Any) -> Arrays:
    return [(x.astype(np.float32) @ w.astype(np.float32).T).astype(np.float16)]


def _blocksparse_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    mask_shape = (a["M"] // a["block_M"], a["N"] // a["block_N"], a["K"] // a["block_K"])
    return [*_gemm_inputs(a, rng), rng.random(mask_shape) < 0.6]


def _blocksparse_reference(a: dict[str, Any], x: np.ndarray, y: np.ndarray, mask: Any) -> Arrays:
    bm, bn, bk = a["block_M"], a["block_N"], a["block_K"]
    out = np.zeros((a["M"], a["N"]), np.float32)
    for i, j, k in zip(*np.nonzero(mask), strict=True):
        out[i * bm : (i + 1) * bm, j * bn : (j + 1) * bn] += x[
            i * bm : (i + 1) * bm, k * bk : (k + 1) * bk
        ].astype(np.float32) @ y[k * bk : (k + 1) * bk, j * bn : (j + 1) * bn].astype(np.float32)
    return [out.astype(np.float16)]


def _clear_reference(a: dict[str, Any], x: np.ndarray, y: np.ndarray) -> Arrays:
    # The kernel clears A_shared after loading it: every product is zero.
    return [np.zeros((a["M"], a["N"]), np.float16)]


def _all_of_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    mask_shape = (
        a["M"] // a["block_M"],
        a["N"] // a["block_N"],
        a["K"] // a["block_K"],
        a["condition_dim"],
    )
    mask = rng.random(mask_shape) < 0.8
    return [*_gemm_inputs(a, rng), mask]


def _all_of_reference(a: dict[str, Any], x: np.ndarray, y: np.ndarray, mask: Any) -> Arrays:
    return _blocksparse_reference(a, x, y, mask.all(axis=-1))


CASES = [
    Case(
        "kernel_gemm.matmul-f16-nn",
        _K + "test_tilelang_kernel_gemm.py",
        "kernel_gemm:matmul",
        _KERNEL_GEMM,
        _gemm_inputs,
        _gemm_reference,
        out_idx=[2],
        **_FP16,
    ),
    Case(
        "kernel_gemm.matmul-f16-tn",
        _K + "test_tilelang_kernel_gemm.py",
        "kernel_gemm:matmul",
        {**_KERNEL_GEMM, "trans_A": True},
        _gemm_inputs,
        _gemm_reference,
        out_idx=[2],
        **_FP16,
    ),
    Case(
        "kernel_gemm.matmul-f16-nt",
        _K + "test_tilelang_kernel_gemm.py",
        "kernel_gemm:matmul",
        {**_KERNEL_GEMM, "trans_B": True},
        _gemm_inputs,
        _gemm_reference,
        out_idx=[2],
        **_FP16,
    ),
    Case(
        "kernel_gemm.matmul-f32-f32acc",
        _K + "test_tilelang_kernel_gemm.py",
        "kernel_gemm:matmul",
        {**_KERNEL_GEMM, "in_dtype": "float32", "out_dtype": "float32", "num_stages": 0},
        _gemm_inputs,
        _gemm_reference,
        out_idx=[2],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "kernel_gemm_batched.matmul_batched",
        _K + "test_tilelang_kernel_gemm_batched.py",
        "kernel_gemm_batched:matmul_batched",
        {**_KERNEL_GEMM, "batch": 2, "num_stages": 0},
        _batched_inputs,
        _batched_reference,
        out_idx=[2],
        **_FP16,
    ),
    Case(
        "kernel_gemm_with_stride.matmul",
        _K + "test_tilelang_kernel_gemm_with_stride.py",
        "kernel_gemm_with_stride:matmul",
        _GEMM,
        _gemm_inputs,
        _gemm_reference,
        out_idx=[2],
        **_FP16,
    ),
    Case(
        "kernel_gemv_simt.gemv_simt",
        _K + "test_tilelang_kernel_gemv_simt.py",
        "kernel_gemv_simt:gemv_simt",
        {
            "M": 1,
            "N": 64,
            "K": 256,
            "in_dtype": "float16",
            "out_dtype": "float16",
            "accum_dtype": "float32",
            "trans_A": False,
            "trans_B": True,
        },
        _gemv_inputs,
        _gemv_reference,
        inplace=[3],
        **_FP16,
    ),
    Case(
        "cpu_gemm.matmul",
        "testing/python/cpu/test_tilelang_cpu_gemm.py",
        "cpu_gemm:matmul",
        _GEMM,
        _gemm_inputs,
        _gemm_reference,
        out_idx=[2],
        **_FP16,
    ),
    Case(
        "cpu_tgemm.matmul-f32-nn",
        "testing/python/cpu/test_tilelang_cpu_tgemm.py",
        "cpu_tgemm:matmul",
        {**_GEMM, "block_K": 16},
        lambda a, rng: _gemm_inputs({**a, "dtype": "float32"}, rng),
        lambda a, x, y: _gemm_reference({**a, "dtype": "float32"}, x, y),
        out_idx=[2],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "cpu_tgemm.matmul-f32-tt",
        "testing/python/cpu/test_tilelang_cpu_tgemm.py",
        "cpu_tgemm:matmul",
        {**_GEMM, "block_K": 16, "trans_A": True, "trans_B": True},
        lambda a, rng: _gemm_inputs({**a, "dtype": "float32"}, rng),
        lambda a, x, y: _gemm_reference({**a, "dtype": "float32"}, x, y),
        out_idx=[2],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "language_pipeline.matmul-order-stage",
        _L + "test_tilelang_language_pipeline.py",
        "language_pipeline:matmul",
        {
            **{k: v for k, v in _KERNEL_GEMM.items() if k != "num_stages"},
            "order": [0, 1, 2],
            "stage": [0, 0, 1],
        },
        _gemm_inputs,
        _gemm_reference,
        out_idx=[2],
        **_FP16,
    ),
    Case(
        "language_pipeline.blocksparse_matmul",
        _L + "test_tilelang_language_pipeline.py",
        "language_pipeline:blocksparse_matmul",
        {**_GEMM, "num_stages": 2},
        _blocksparse_inputs,
        _blocksparse_reference,
        **_FP16,
    ),
    Case(
        "language_all_of.blocksparse_matmul_global",
        _L + "test_tilelang_language_all_of.py",
        "language_all_of:blocksparse_matmul_global",
        {
            **_GEMM,
            "condition_dim": 2,
            "num_stages": 2,
            "thread_num": 128,
            "enable_rasteration": True,
        },
        _all_of_inputs,
        _all_of_reference,
        out_idx=[3],
        **_FP16,
    ),
    Case(
        "language_clear.matmul",
        _L + "test_tilelang_language_clear.py",
        "language_clear:matmul",
        _GEMM,
        _gemm_nt_inputs,
        _clear_reference,
        out_idx=[2],
        **_FP16,
    ),
]
