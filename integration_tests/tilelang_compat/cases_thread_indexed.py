"""Thread-indexed programs (explicit ``T.get_thread_binding``) at float32: TileLang's GEMVs.

The fp16 cases of the same programs (cases_examples.py, cases_gemm.py) are measured
against numpy converting the fp16 matrix to fp32 inside the timed call, which costs
numpy more than the product; at float32 numpy's ``B @ A`` is one BLAS sgemv, the
peer a GEMV must meet. Same programs, only ``dtype``/``accum_dtype`` differ.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case

_GEMV = {"N": 128, "K": 256, "BLOCK_N": 32, "dtype": "float32", "accum_dtype": "float32"}
_SOURCE = "examples/gemv/example_gemv.py@3ee0988c8"


def _gemv_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [
        rng.standard_normal(a["K"]).astype(np.float32),
        rng.standard_normal((a["N"], a["K"])).astype(np.float32),
    ]


def _gemv_ref(a: dict[str, Any], x: np.ndarray, w: np.ndarray) -> Arrays:
    return [(w.astype(np.float64) @ x.astype(np.float64)).astype(np.float32)]


def _simt_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    m, n, k = a["M"], a["N"], a["K"]
    return [
        rng.standard_normal((m, k)).astype(np.float32),
        rng.standard_normal((n, k)).astype(np.float32),
        rng.standard_normal(n).astype(np.float32),
        np.zeros((m, n), np.float32),
    ]


def _simt_ref(a: dict[str, Any], x: np.ndarray, w: np.ndarray, bias: Any, c: Any) -> Arrays:
    return [(x.astype(np.float64) @ w.astype(np.float64).T).astype(np.float32)]


# Sums of K = 256..4096 products in another order than float64's: relative 1e-4.
_TOLERANCE = {"rtol": 1e-4, "atol": 1e-3}

CASES = [
    Case(
        "example_gemv.naive_gemv-f32",
        _SOURCE,
        "example_gemv:naive_gemv",
        {**_GEMV, "N": 256, "BLOCK_N": 128, "BLOCK_K": 64},
        _gemv_inputs,
        _gemv_ref,
        **_TOLERANCE,
    ),
    Case(
        "example_gemv.naive_splitk_gemv-f32",
        _SOURCE,
        "example_gemv:naive_splitk_gemv",
        {**_GEMV, "BLOCK_K": 32},
        _gemv_inputs,
        _gemv_ref,
        **_TOLERANCE,
    ),
    Case(
        "example_gemv.splitk_gemv-f32",
        _SOURCE,
        "example_gemv:splitk_gemv",
        {**_GEMV, "BLOCK_K": 64, "reduce_threads": 8},
        _gemv_inputs,
        _gemv_ref,
        **_TOLERANCE,
    ),
    Case(
        "example_gemv.splitk_gemv_vectorized-f32",
        _SOURCE,
        "example_gemv:splitk_gemv_vectorized",
        {**_GEMV, "reduce_threads": 8},
        _gemv_inputs,
        _gemv_ref,
        **_TOLERANCE,
    ),
    Case(
        "example_gemv_allreduce.splitk_gemv_vectorized_tvm-f32",
        _SOURCE,
        "example_gemv_allreduce:splitk_gemv_vectorized_tvm",
        {**_GEMV, "reduce_threads": 8},
        _gemv_inputs,
        _gemv_ref,
        **_TOLERANCE,
    ),
    Case(
        "kernel_gemv_simt.gemv_simt-f32",
        "testing/python/kernel/test_tilelang_kernel_gemv_simt.py",
        "kernel_gemv_simt:gemv_simt",
        {
            "M": 1,
            "N": 64,
            "K": 256,
            "in_dtype": "float32",
            "out_dtype": "float32",
            "accum_dtype": "float32",
            "trans_A": False,
            "trans_B": True,
        },
        _simt_inputs,
        _simt_ref,
        inplace=[3],
        **_TOLERANCE,
    ),
]
