"""Tuning an eager GEMM by hand (twin of autotune_gemm.py): ``par_compile`` builds every
block size in parallel (with a progress bar), each is checked against numpy and timed,
the fastest is kept. ``tl_jit.autotune`` itself decorates classic builders.

Run: python examples/autotune_gemm_eager.py
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


@tl_jit.jit
def matmul(A, B, block_M: int = 64, block_N: int = 64, block_K: int = 32):
    M, N, K = T.const("M N K")
    A: T.Tensor[[M, K], T.float32]
    B: T.Tensor[[K, N], T.float32]
    C = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), T.float32)
        B_shared = T.alloc_shared((block_K, block_N), T.float32)
        C_local = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def main() -> None:
    size = 256
    a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    kernels = matmul.par_compile([{"M": size, "N": size, "K": size, **c} for c in CONFIGS])
    timings = []
    for config, kernel in zip(CONFIGS, kernels, strict=True):
        assert kernel is not None
        np.testing.assert_allclose(kernel(a, a), a @ a, rtol=1e-3, atol=1e-3)
        latency = kernel.get_profiler().do_bench(warmup=5, rep=20)
        timings.append((latency, config))
        print(f"  {config}: {latency:.3f} ms")
    latency, best = min(timings, key=lambda t: t[0])
    print(f"best config: {best}, {latency:.3f} ms")
    # Calling with the winning block sizes reuses the kernel compiled above.
    np.testing.assert_allclose(matmul(a, a, **best), a @ a, rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    main()
