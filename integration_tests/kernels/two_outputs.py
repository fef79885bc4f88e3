"""Two outputs from one pass: ``S = A + B`` and ``P = A * B``."""

from typing import Any

import numpy as np

import tl_ir.language as T

OUT_IDX = [-2, -1]
CASES: list[dict[str, Any]] = [
    {"args": {"M": 64, "N": 64, "block_M": 32, "block_N": 32}},
    {"args": {"M": 65, "N": 31, "block_M": 32, "block_N": 16}},
    {"args": {"M": 48, "N": 96, "block_M": 16, "block_N": 32, "dtype": "float16"}},
]
TOLERANCE = {"float16": 1e-3, "float32": 1e-6}
#: What the GPU source suite (tl_backend_api.gpu.suite) checks of CASES[0]'s sources:
#: the launch, worked out by hand from the T.Kernel below, and whether the sources must
#: hold a block barrier (the kernel shares tiles between threads through shared memory).
GPU_SOURCES: dict[str, Any] = {"grid": (2, 2), "block": (128,), "block_barriers": True}


def two_outputs(M, N, block_M, block_N, dtype="float32"):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
        S: T.Tensor((M, N), dtype),
        P: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a = T.alloc_shared((block_M, block_N), dtype)
            b = T.alloc_shared((block_M, block_N), dtype)
            s = T.alloc_fragment((block_M, block_N), dtype)
            p = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N], a)
            T.copy(B[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N], b)
            for i, j in T.Parallel(block_M, block_N):
                s[i, j] = a[i, j] + b[i, j]
                p[i, j] = a[i, j] * b[i, j]
            T.copy(s, S[by * block_M, bx * block_N])
            T.copy(p, P[by * block_M, bx * block_N])

    return main


KERNEL = two_outputs


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    a = case["args"]
    dtype = a.get("dtype", "float32")
    shape = (a["M"], a["N"])
    return [rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)]


def REFERENCE(case: dict[str, Any], A: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    return {"S": A + B, "P": A * B}
