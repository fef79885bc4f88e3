"""Row-wise inclusive prefix sum with an ``alloc_var`` accumulator and a serial loop:
each thread scans one row."""

from typing import Any

import numpy as np

import tl_ir.language as T

OUT_IDX = [-1]
CASES: list[dict[str, Any]] = [
    {"args": {"M": 128, "N": 32, "threads": 128}},
    {"args": {"M": 100, "N": 17, "threads": 64}},
    {"args": {"M": 3, "N": 50, "threads": 32}},
]
TOLERANCE = {"float32": 1e-4}
#: What the GPU source suite (tl_backend_api.gpu.suite) checks of CASES[0]'s sources:
#: the launch, worked out by hand from the T.Kernel below, and whether the sources must
#: hold a block barrier (the kernel shares tiles between threads through shared memory).
GPU_SOURCES: dict[str, Any] = {"grid": (1,), "block": (128,), "block_barriers": False}


def serial_scan(M, N, threads, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, threads), threads=threads) as bx:
            tx = T.get_thread_binding(0)
            row = bx * threads + tx
            acc = T.alloc_var(dtype, init=0)
            if row < M:
                for j in T.serial(N):
                    acc = acc + A[row, j]
                    B[row, j] = acc

    return main


KERNEL = serial_scan


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    a = case["args"]
    return [rng.standard_normal((a["M"], a["N"])).astype(a.get("dtype", "float32"))]


def REFERENCE(case: dict[str, Any], A: np.ndarray) -> dict[str, np.ndarray]:
    return {"B": np.cumsum(A, axis=1).astype(A.dtype)}
