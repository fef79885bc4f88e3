"""Row softmax: each block normalizes ``block_M`` rows of length ``N`` held in a fragment."""

from typing import Any

import numpy as np

import tl_ir.language as T

OUT_IDX = [-1]
CASES: list[dict[str, Any]] = [
    {"args": {"M": 64, "N": 64, "block_M": 16}},
    {"args": {"M": 50, "N": 96, "block_M": 16}},
    {"args": {"M": 37, "N": 128, "block_M": 8}},
]
TOLERANCE = {"float32": 1e-5}
#: What the GPU source suite (tl_backend_api.gpu.suite) checks of CASES[0]'s sources:
#: the launch, worked out by hand from the T.Kernel below, and whether the sources must
#: hold a block barrier (the kernel shares tiles between threads through shared memory).
GPU_SOURCES: dict[str, Any] = {"grid": (4,), "block": (128,), "block_barriers": True}


def softmax(M, N, block_M, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            row_max = T.alloc_fragment((block_M,), dtype)
            row_sum = T.alloc_fragment((block_M,), dtype)
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return main


KERNEL = softmax


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    a = case["args"]
    return [rng.standard_normal((a["M"], a["N"])).astype(a.get("dtype", "float32"))]


def REFERENCE(case: dict[str, Any], X: np.ndarray) -> dict[str, np.ndarray]:
    shifted = X - X.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return {"Y": (e / e.sum(axis=1, keepdims=True)).astype(X.dtype)}
