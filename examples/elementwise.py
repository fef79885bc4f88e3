"""Element-wise add over tiles with ``T.Parallel`` (partial last tiles included).

Run: python examples/elementwise.py
"""

from __future__ import annotations

import numpy as np

import tl_jit
import tl_jit.language as T


@tl_jit.jit(out_idx=[-1])
def add(M, N, block_M=32, block_N=64, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a = T.alloc_fragment((block_M, block_N), dtype)
            b = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], a)
            T.copy(B[by * block_M, bx * block_N], b)
            for i, j in T.Parallel(block_M, block_N):
                a[i, j] = a[i, j] + b[i, j]
            T.copy(a, C[by * block_M, bx * block_N])

    return main


def main() -> None:
    kernel = add(300, 200)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 200), dtype=np.float32)
    b = rng.standard_normal((300, 200), dtype=np.float32)
    np.testing.assert_allclose(kernel(a, b), a + b, rtol=1e-6)
    print("elementwise add 300x200: correct")
    print(kernel.get_kernel_source()[:400])


if __name__ == "__main__":
    main()
