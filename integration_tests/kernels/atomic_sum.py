"""Row sums by atomics: each block reduces a ``block_M x block_N`` tile along its rows
and atomically adds the partial sums into ``out`` (which the caller zeroes)."""

from typing import Any

import numpy as np

import tl_ir.language as T

# ``out`` is updated in place (it must start at zero), so it is an input here.
OUT_IDX: list[int] = []
CASES: list[dict[str, Any]] = [
    {"args": {"M": 64, "N": 128, "block_M": 32, "block_N": 32}},
    {"args": {"M": 50, "N": 90, "block_M": 16, "block_N": 32}},
    {"args": {"M": 9, "N": 300, "block_M": 8, "block_N": 64}},
]
TOLERANCE = {"float32": 1e-4}
#: What the GPU source suite (tl_backend_api.gpu.suite) checks of CASES[0]'s sources:
#: the launch, worked out by hand from the T.Kernel below, and whether the sources must
#: hold a block barrier (the kernel shares tiles between threads through shared memory).
GPU_SOURCES: dict[str, Any] = {"grid": (4, 2), "block": (128,), "block_barriers": False}


def atomic_row_sum(M, N, block_M, block_N, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), out: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            tile = T.alloc_fragment((block_M, block_N), dtype)
            part = T.alloc_fragment((block_M,), dtype)
            # Columns past N of the last tile are not read: clear so they add zero.
            T.clear(tile)
            T.copy(A[by * block_M, bx * block_N], tile)
            T.reduce_sum(tile, part, dim=1)
            # One atomic per row: in a T.Parallel nest each element's update runs once
            # (outside one, as in TileLang, every thread of the block would run it).
            for i in T.Parallel(block_M):
                if by * block_M + i < M:
                    T.atomic_add(out[by * block_M + i], part[i])

    return main


KERNEL = atomic_row_sum


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    a = case["args"]
    dtype = a.get("dtype", "float32")
    return [rng.standard_normal((a["M"], a["N"])).astype(dtype), np.zeros((a["M"],), dtype)]


def REFERENCE(case: dict[str, Any], A: np.ndarray, out: np.ndarray) -> dict[str, np.ndarray]:
    return {"out": out + A.sum(axis=1).astype(A.dtype)}
