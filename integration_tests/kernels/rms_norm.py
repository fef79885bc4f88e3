"""RMS norm: ``Y = X / sqrt(mean(X**2, axis=1) + eps) * W`` per row."""

from typing import Any

import numpy as np

import tl_ir.language as T

OUT_IDX = [-1]
CASES: list[dict[str, Any]] = [
    {"args": {"M": 64, "N": 128, "block_M": 16}},
    {"args": {"M": 45, "N": 96, "block_M": 16}},
    {"args": {"M": 10, "N": 256, "block_M": 4, "eps": 1e-5}},
]
TOLERANCE = {"float32": 1e-5}
#: What the GPU source suite (tl_backend_api.gpu.suite) checks of CASES[0]'s sources:
#: the launch, worked out by hand from the T.Kernel below, and whether the sources must
#: hold a block barrier (the kernel shares tiles between threads through shared memory).
GPU_SOURCES: dict[str, Any] = {"grid": (4,), "block": (128,), "block_barriers": True}


def rms_norm(M, N, block_M, eps=1e-6, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            sq = T.alloc_fragment((block_M, N), dtype)
            w = T.alloc_shared((N,), dtype)
            ss = T.alloc_fragment((block_M,), dtype)
            T.copy(X[bx * block_M, 0], x)
            T.copy(W, w)
            for i, j in T.Parallel(block_M, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, ss, dim=1)
            for i in T.Parallel(block_M):
                ss[i] = T.rsqrt(ss[i] / T.float32(N) + T.float32(eps))
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * ss[i] * w[j]
            T.copy(x, Y[bx * block_M, 0])

    return main


KERNEL = rms_norm


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    a = case["args"]
    dtype = a.get("dtype", "float32")
    return [
        rng.standard_normal((a["M"], a["N"])).astype(dtype),
        rng.standard_normal((a["N"],)).astype(dtype),
    ]


def REFERENCE(case: dict[str, Any], X: np.ndarray, W: np.ndarray) -> dict[str, np.ndarray]:
    eps = case["args"].get("eps", 1e-6)
    rms = np.sqrt((X.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + eps)
    return {"Y": (X / rms * W).astype(X.dtype)}
