"""Row-wise inclusive prefix sum with the ``T.cumsum`` tile op on a shared tile."""

from typing import Any

import numpy as np

import tl_ir.language as T

OUT_IDX = [-1]
CASES: list[dict[str, Any]] = [
    {"args": {"M": 64, "N": 32, "block_M": 16}},
    {"args": {"M": 45, "N": 64, "block_M": 16}},
    {"args": {"M": 20, "N": 16, "block_M": 8, "reverse": True}},
]
TOLERANCE = {"float32": 1e-4}
#: What the GPU source suite (tl_backend_api.gpu.suite) checks of CASES[0]'s sources:
#: the launch, worked out by hand from the T.Kernel below, and whether the sources must
#: hold a block barrier (the kernel shares tiles between threads through shared memory).
GPU_SOURCES: dict[str, Any] = {"grid": (4,), "block": (128,), "block_barriers": True}


def tile_cumsum(M, N, block_M, reverse=False, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            tile = T.alloc_shared((block_M, N), dtype)
            T.copy(A[bx * block_M, 0], tile)
            T.cumsum(tile, dim=1, reverse=reverse)
            T.copy(tile, B[bx * block_M, 0])

    return main


KERNEL = tile_cumsum


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    a = case["args"]
    return [rng.standard_normal((a["M"], a["N"])).astype(a.get("dtype", "float32"))]


def REFERENCE(case: dict[str, Any], A: np.ndarray) -> dict[str, np.ndarray]:
    if case["args"].get("reverse", False):
        return {"B": np.flip(np.cumsum(np.flip(A, axis=1), axis=1), axis=1).astype(A.dtype)}
    return {"B": np.cumsum(A, axis=1).astype(A.dtype)}
