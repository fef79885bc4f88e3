"""Elementwise ``C = A + B`` over 2-D tiles; the last tile in each dim is partial."""

from typing import Any

import numpy as np

import tl_ir.language as T

OUT_IDX = [-1]
CASES: list[dict[str, Any]] = [
    {"args": {"M": 128, "N": 128, "block_M": 32, "block_N": 32}},
    {"args": {"M": 100, "N": 70, "block_M": 32, "block_N": 32}},
    {"args": {"M": 33, "N": 257, "block_M": 16, "block_N": 64, "dtype": "float16"}},
]
TOLERANCE = {"float16": 1e-3, "float32": 1e-6}
#: What the GPU source suite (tl_backend_api.gpu.suite) checks of CASES[0]'s sources:
#: the launch, worked out by hand from the T.Kernel below, and whether the sources must
#: hold a block barrier (the kernel shares tiles between threads through shared memory).
GPU_SOURCES: dict[str, Any] = {"grid": (4, 4), "block": (128,), "block_barriers": False}


def elementwise_add(M, N, block_M, block_N, dtype="float32"):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_local = T.alloc_fragment((block_M, block_N), dtype)
            B_local = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_local)
            T.copy(B[by * block_M, bx * block_N], B_local)
            for i, j in T.Parallel(block_M, block_N):
                A_local[i, j] = A_local[i, j] + B_local[i, j]
            # Rows/cols past M/N of the last tiles are not written (partial tile).
            T.copy(A_local, C[by * block_M, bx * block_N])

    return main


KERNEL = elementwise_add


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    a = case["args"]
    dtype = a.get("dtype", "float32")
    shape = (a["M"], a["N"])
    return [rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)]


def REFERENCE(case: dict[str, Any], A: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": A + B}
