"""A ``T.dynamic`` dimension in the eager style: one compiled kernel serves every row
count ``M`` (twin of symbolic_shape.py); ``N`` is a ``T.const``, so each width compiles.

Run: python examples/symbolic_shape_eager.py
"""

from __future__ import annotations

import numpy as np

import tl_jit
import tl_jit.language as T


@tl_jit.jit
def scale_rows(A, alpha: T.float32, block_M: int = 32, dtype: T.dtype = T.float32):
    M = T.dynamic("M")
    N = T.const("N")
    A: T.Tensor[[M, N], dtype]
    B = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        tile = T.alloc_fragment((block_M, N), dtype)
        T.copy(A[bx * block_M, 0], tile)
        for i, j in T.Parallel(block_M, N):
            tile[i, j] = tile[i, j] * alpha
        T.copy(tile, B[bx * block_M, 0])
    return B


def main() -> None:
    kernel = scale_rows.compile(N=64)
    print("params:", [(p.name, p.shape) for p in kernel.params])
    rng = np.random.default_rng(0)
    for rows in (1, 77, 300):
        a = rng.standard_normal((rows, 64), dtype=np.float32)
        np.testing.assert_allclose(scale_rows(a, 2.5), a * 2.5, rtol=1e-6)
        print(f"M={rows}: correct")
    latency = kernel.get_profiler(dims={"M": 1024}).do_bench(warmup=5, rep=20)
    print(f"M=1024: {latency:.4f} ms")


if __name__ == "__main__":
    main()
