"""Autotuning a GEMM: compile several block sizes in worker processes, check each against
numpy, time each, keep the fastest (the result is cached on disk).

Run: python examples/autotune_gemm.py
"""

from __future__ import annotations

import numpy as np

import tl_jit
import tl_jit.language as T

CONFIGS = [
    {"block_M": 64, "block_N": 64, "block_K": 32},
    {"block_M": 32, "block_N": 32, "block_K": 32},
    {"block_M": 8, "block_N": 8, "block_K": 8},
]


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b


@tl_jit.autotune(configs=CONFIGS, warmup=5, rep=20, ref_prog=reference, rtol=1e-3, atol=1e-3)
@tl_jit.jit(out_idx=[-1])
def matmul(M, N, K, block_M=64, block_N=64, block_K=32, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def main() -> None:
    kernel = matmul(256, 256, 256)
    print(f"best config: {kernel.config}, {kernel.latency:.3f} ms")
    for result in matmul.results:
        status = f"{result.latency:.3f} ms" if result.latency is not None else result.error
        print(f"  {result.config}: {status}")
    a = np.random.default_rng(0).standard_normal((256, 256), dtype=np.float32)
    np.testing.assert_allclose(kernel(a, a), a @ a, rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    main()
