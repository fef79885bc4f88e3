"""Stream-k GEMM from TileLang's examples/gemm_streamk (eager style, schedule in module globals)."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case


def _streamk_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    # As TileLang's example: uniform in [-1, 1), C zeroed (partial tiles add atomically).
    m, n, k = a["M"], a["N"], a["K"]
    return [
        (rng.random((m, k)) * 2 - 1).astype(np.float16),
        (rng.random((n, k)) * 2 - 1).astype(np.float16),
        np.zeros((m, n), np.float32),
    ]


def _streamk_ref(a: dict[str, Any], x: Any, w: Any, _c: Any) -> Arrays:
    return [x.astype(np.float32) @ w.astype(np.float32).T]


CASES = [
    Case(
        "example_gemm_streamk.tl_matmul_streamk",
        "examples/gemm_streamk/example_tilelang_gemm_streamk.py@b9a5907a2",
        "example_gemm_streamk:streamk_gemm",
        # TileLang's sizes and schedule: 128 tiles of 16 x 128 over 108 programs, so 20
        # tiles are split along K between programs (atomic adds) and 108 run whole.
        {
            "M": 256,
            "N": 1024,
            "K": 512,
            "programs": 108,
            "block_M": 16,
            "block_N": 128,
            "block_K": 32,
        },
        _streamk_inputs,
        _streamk_ref,
        inplace=[2],
        rtol=1e-3,
        atol=1e-3,
    ),
]
