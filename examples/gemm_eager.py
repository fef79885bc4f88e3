"""Tiled GEMM in the eager style (twin of gemm.py): ``gemm(a, b)`` binds ``M, N, K``
from the arrays, compiles once per shape and returns ``C``.

Run: python examples/gemm_eager.py [--size 512]
"""

from __future__ import annotations

import argparse

import numpy as np

import tl_jit
import tl_jit.language as T


@tl_jit.jit
def matmul(
    A,
    B,
    block_M: int = 64,
    block_N: int = 64,
    block_K: int = 32,
    dtype: T.dtype = T.float32,
    accum_dtype: T.dtype = T.float32,
):
    M, N, K = T.const("M N K")
    A: T.Tensor[[M, K], dtype]
    B: T.Tensor[[K, N], dtype]
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=256)
    size = parser.parse_args().size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    np.testing.assert_allclose(matmul(a, b), a @ b, rtol=1e-3, atol=1e-3)
    kernel = matmul.compile(M=size, N=size, K=size)  # the same kernel, ahead of time
    latency_ms = kernel.get_profiler().do_bench(warmup=10, rep=50)
    assert isinstance(latency_ms, float)
    print(
        f"gemm {size}^3 (eager): correct; {latency_ms:.3f} ms, "
        f"{2 * size**3 / latency_ms / 1e6:.1f} GFLOP/s"
    )


if __name__ == "__main__":
    main()
