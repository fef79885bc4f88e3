"""Column sums ``out[j] = sum_i A[i, j]``: row tiles folded into a fragment with
``reduce_sum(dim=0, clear=False)``."""

from typing import Any

import numpy as np

import tl_ir.language as T

OUT_IDX = [-1]
CASES: list[dict[str, Any]] = [
    {"args": {"M": 128, "N": 64, "block_M": 32, "block_N": 32}},
    {"args": {"M": 100, "N": 70, "block_M": 32, "block_N": 32}},
    {"args": {"M": 7, "N": 129, "block_M": 4, "block_N": 64}},
]
TOLERANCE = {"float32": 1e-4}
#: What the GPU source suite (tl_backend_api.gpu.suite) checks of CASES[0]'s sources:
#: the launch, worked out by hand from the T.Kernel below, and whether the sources must
#: hold a block barrier (the kernel shares tiles between threads through shared memory).
GPU_SOURCES: dict[str, Any] = {"grid": (2,), "block": (128,), "block_barriers": False}


def column_reduce(M, N, block_M, block_N, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), out: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bx:
            tile = T.alloc_fragment((block_M, block_N), dtype)
            acc = T.alloc_fragment((block_N,), dtype)
            T.clear(acc)
            for ko in T.serial(T.ceildiv(M, block_M)):
                # Rows past M of the last tile are not read: clear so they add zero.
                T.clear(tile)
                T.copy(A[ko * block_M, bx * block_N], tile)
                T.reduce_sum(tile, acc, dim=0, clear=False)
            T.copy(acc, out[bx * block_N])

    return main


KERNEL = column_reduce


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    a = case["args"]
    return [rng.standard_normal((a["M"], a["N"])).astype(a.get("dtype", "float32"))]


def REFERENCE(case: dict[str, Any], A: np.ndarray) -> dict[str, np.ndarray]:
    return {"out": A.sum(axis=0).astype(A.dtype)}
