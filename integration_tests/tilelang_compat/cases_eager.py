"""Cases from TileLang's examples/ written in the eager style (``T.const``/``T.empty``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case


def _gemm_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [
        rng.standard_normal((a["M"], a["K"])).astype(np.float16),
        rng.standard_normal((a["K"], a["N"])).astype(np.float16),
    ]


def _gemm_ref(a: dict[str, Any], x: np.ndarray, y: np.ndarray) -> Arrays:
    return [(x.astype(np.float32) @ y.astype(np.float32)).astype(np.float16)]


_PERSISTENT_SOURCE = "examples/gemm/example_gemm_persistent.py"
# The hand-written tile loop visits every tile only when the N-tile count is a multiple
# of its group size (8): (tile_id // 8) % m_blocks, tile_id % 8 + ... maps tile ids past
# m_blocks * n_blocks onto real tiles otherwise, and those tiles of the T.empty output
# are never written. These sizes (8 N-tiles) are ones the example is correct for.
_PERSISTENT = {
    "M": 128,
    "N": 256,
    "K": 64,
    "block_M": 64,
    "block_N": 32,
    "block_K": 32,
    "threads": 128,
    "num_stages": 2,
}

CASES = [
    Case(
        "example_gemm_persistent.matmul_persistent",
        _PERSISTENT_SOURCE,
        "example_gemm_persistent:matmul_persistent",
        _PERSISTENT,
        _gemm_inputs,
        _gemm_ref,
        out_idx=[2],
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gemm_persistent.matmul_persistent-tile-loop",
        _PERSISTENT_SOURCE,
        "example_gemm_persistent:matmul_persistent",
        {**_PERSISTENT, "use_persistent_primitive": False},
        _gemm_inputs,
        _gemm_ref,
        out_idx=[2],
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gemm_persistent.matmul_non_persistent",
        _PERSISTENT_SOURCE,
        "example_gemm_persistent:matmul_non_persistent",
        _PERSISTENT,
        _gemm_inputs,
        _gemm_ref,
        out_idx=[2],
        rtol=1e-2,
        atol=1e-2,
    ),
]
