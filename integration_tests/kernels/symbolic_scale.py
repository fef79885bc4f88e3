"""``B = alpha * A + bias`` with a symbolic row count M (bound at call time) and a
scalar parameter ``alpha``."""

from typing import Any

import numpy as np

import tl_ir.language as T

OUT_IDX = [-1]
# One compiled kernel serves every M: "runtime" holds the sizes to call it with.
CASES: list[dict[str, Any]] = [
    {"args": {"N": 64, "block_M": 32}, "runtime": {"M": 64, "alpha": 2.0}},
    {"args": {"N": 64, "block_M": 32}, "runtime": {"M": 1, "alpha": -0.5}},
    {"args": {"N": 64, "block_M": 32}, "runtime": {"M": 77, "alpha": 3.0}},
    {"args": {"N": 48, "block_M": 16, "bias": 1.0}, "runtime": {"M": 130, "alpha": 0.25}},
]
TOLERANCE = {"float32": 1e-6}
#: What the GPU source suite (tl_backend_api.gpu.suite) checks of CASES[0]'s sources:
#: the launch, worked out by hand from the T.Kernel below, and whether the sources must
#: hold a block barrier (the kernel shares tiles between threads through shared memory).
GPU_SOURCES: dict[str, Any] = {
    "grid": ("(((M - 1) // 32) + 1)",),
    "block": (128,),
    "block_barriers": False,
}


def symbolic_scale(N, block_M, bias=0.0, dtype="float32"):
    M = T.symbolic("M")

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), alpha: T.float32, B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            tile = T.alloc_fragment((block_M, N), dtype)
            T.copy(A[bx * block_M, 0], tile)
            for i, j in T.Parallel(block_M, N):
                tile[i, j] = tile[i, j] * alpha + T.float32(bias)
            T.copy(tile, B[bx * block_M, 0])

    return main


KERNEL = symbolic_scale


def make_inputs(case: dict[str, Any], rng: np.random.Generator) -> list[Any]:
    r = case["runtime"]
    a = rng.standard_normal((r["M"], case["args"]["N"])).astype(
        case["args"].get("dtype", "float32")
    )
    return [a, r["alpha"]]


def REFERENCE(case: dict[str, Any], A: np.ndarray, alpha: float) -> dict[str, np.ndarray]:
    bias = case["args"].get("bias", 0.0)
    return {"B": (A * np.float32(alpha) + np.float32(bias)).astype(A.dtype)}
