"""Row softmax in the eager style (twin of softmax.py).

Run: python examples/softmax_eager.py
"""

from __future__ import annotations

import numpy as np

import tl_jit
import tl_jit.language as T


@tl_jit.jit
def softmax(X, block_M: int = 8, dtype: T.dtype = T.float32):
    M, N = T.const("M N")
    X: T.Tensor[[M, N], dtype]
    Y = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        tile = T.alloc_fragment((block_M, N), dtype)
        row_max = T.alloc_fragment((block_M,), dtype)
        row_sum = T.alloc_fragment((block_M,), dtype)
        T.copy(X[bx * block_M, 0], tile)
        T.reduce_max(tile, row_max, dim=1)
        for i, j in T.Parallel(block_M, N):
            tile[i, j] = T.exp(tile[i, j] - row_max[i])
        T.reduce_sum(tile, row_sum, dim=1)
        for i, j in T.Parallel(block_M, N):
            tile[i, j] = tile[i, j] / row_sum[i]
        T.copy(tile, Y[bx * block_M, 0])
    return Y


def reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main() -> None:
    x = np.random.default_rng(0).standard_normal((64, 128), dtype=np.float32)
    np.testing.assert_allclose(softmax(x), reference(x), rtol=1e-5, atol=1e-6)
    # The kernel behind the call, compiled ahead of time, has the classic profiler.
    softmax.compile(M=64, N=128).get_profiler().assert_allclose(reference, rtol=1e-5, atol=1e-6)
    print("softmax 64x128 (eager): correct")


if __name__ == "__main__":
    main()
