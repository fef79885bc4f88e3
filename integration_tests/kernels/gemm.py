"""Tiled GEMM ``C = A @ B`` with shared/fragment tiles and a pipelined K loop."""

from typing import Any

import numpy as np

import tl_ir.language as T

OUT_IDX = [-1]
CASES: list[dict[str, Any]] = [
    {"args": {"M": 128, "N": 128, "K": 64, "block_M": 64, "block_N": 64, "block_K": 32}},
    {"args": {"M": 200, "N": 136, "K": 72, "block_M": 64, "block_N": 64, "block_K": 32}},
    {
        "args": {
            "M": 96,
            "N": 80,
            "K": 48,
            "block_M": 32,
            "block_N": 32,
            "block_K": 16,
            "dtype": "float32",
            "accum_dtype": "float32",
        }
    },
]
TOLERANCE = {"float16": 2e-2, "float32": 1e-4}
#: What the GPU source suite (tl_backend_api.gpu.suite) checks of CASES[0]'s sources:
#: the launch, worked out by hand from the T.Kernel below, and whether the sources must
#: hold a block barrier (the kernel shares tiles between threads through shared memory).
GPU_SOURCES: dict[str, Any] = {"grid": (2, 2), "block": (128,), "block_barriers": True}


def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


KERNEL = matmul


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    a = case["args"]
    dtype = a.get("dtype", "float16")
    return [
        rng.standard_normal((a["M"], a["K"])).astype(dtype),
        rng.standard_normal((a["K"], a["N"])).astype(dtype),
    ]


def REFERENCE(case: dict[str, Any], A: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": (A.astype(np.float32) @ B.astype(np.float32)).astype(A.dtype)}
