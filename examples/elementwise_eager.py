"""Element-wise add in the eager style: the kernel is a function of its tensors; the
shape symbols ``M, N`` are bound from the arguments and the output comes from
``T.empty`` (twin of elementwise.py).

Run: python examples/elementwise_eager.py
"""

from __future__ import annotations

import numpy as np

import tl_jit
import tl_jit.language as T


@tl_jit.jit
def add(A, B, block_M: int = 32, block_N: int = 64, dtype: T.dtype = T.float32):
    M, N = T.const("M N")
    A: T.Tensor[[M, N], dtype]
    B: T.Tensor[[M, N], dtype]
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        a = T.alloc_fragment((block_M, block_N), dtype)
        b = T.alloc_fragment((block_M, block_N), dtype)
        T.copy(A[by * block_M, bx * block_N], a)
        T.copy(B[by * block_M, bx * block_N], b)
        for i, j in T.Parallel(block_M, block_N):
            a[i, j] = a[i, j] + b[i, j]
        T.copy(a, C[by * block_M, bx * block_N])
    return C


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 200), dtype=np.float32)
    b = rng.standard_normal((300, 200), dtype=np.float32)
    np.testing.assert_allclose(add(a, b), a + b, rtol=1e-6)  # compiles, then runs
    np.testing.assert_allclose(add(b, a), a + b, rtol=1e-6)  # same shapes: no compile
    print("elementwise add 300x200 (eager): correct")
    print(add.compile(M=300, N=200).get_kernel_source()[:400])


if __name__ == "__main__":
    main()
