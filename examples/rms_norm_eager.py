"""RMS norm in the eager style (twin of rms_norm.py).

Run: python examples/rms_norm_eager.py
"""

from __future__ import annotations

import numpy as np

import tl_jit
import tl_jit.language as T


@tl_jit.jit
def rms_norm(X, block_M: int = 4, eps: float = 1e-6, dtype: T.dtype = T.float32):
    M, N = T.const("M N")
    X: T.Tensor[[M, N], dtype]
    Y = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        tile = T.alloc_fragment((block_M, N), dtype)
        squares = T.alloc_fragment((block_M, N), dtype)
        total = T.alloc_fragment((block_M,), dtype)
        T.copy(X[bx * block_M, 0], tile)
        for i, j in T.Parallel(block_M, N):
            squares[i, j] = tile[i, j] * tile[i, j]
        T.reduce_sum(squares, total, dim=1)
        for i in T.Parallel(block_M):
            total[i] = T.rsqrt(total[i] / N + eps)
        for i, j in T.Parallel(block_M, N):
            tile[i, j] = tile[i, j] * total[i]
        T.copy(tile, Y[bx * block_M, 0])
    return Y


def main() -> None:
    x = np.random.default_rng(0).standard_normal((50, 256), dtype=np.float32)
    expected = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(rms_norm(x), expected, rtol=1e-4, atol=1e-5)
    print("rms_norm 50x256 (eager): correct")


if __name__ == "__main__":
    main()
