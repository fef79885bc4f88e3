"""GEMM with transposed operands: ``C = A.T @ B.T`` with A stored (K, M), B stored (N, K)."""

from typing import Any

import numpy as np

import tl_ir.language as T

OUT_IDX = [-1]
CASES: list[dict[str, Any]] = [
    {"args": {"M": 64, "N": 64, "K": 64, "block_M": 32, "block_N": 32, "block_K": 32}},
    {"args": {"M": 70, "N": 50, "K": 45, "block_M": 32, "block_N": 32, "block_K": 16}},
    {
        "args": {
            "M": 64,
            "N": 96,
            "K": 32,
            "block_M": 64,
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


def matmul_transposed(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def main(
        A: T.Tensor((K, M), dtype),
        B: T.Tensor((N, K), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_K, block_M), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[ko * block_K, by * block_M], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_A=True, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


KERNEL = matmul_transposed


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    a = case["args"]
    dtype = a.get("dtype", "float16")
    return [
        rng.standard_normal((a["K"], a["M"])).astype(dtype),
        rng.standard_normal((a["N"], a["K"])).astype(dtype),
    ]


def REFERENCE(case: dict[str, Any], A: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": (A.astype(np.float32).T @ B.astype(np.float32).T).astype(A.dtype)}
