"""A kernel module using PEP 563 string annotations (loaded by path from the tests)."""

from __future__ import annotations

import tl_ir.language as T


def scale(N, block_M, dtype="float32"):
    M = T.symbolic("M")

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), alpha: T.float32, B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=32) as bx:
            t = T.alloc_fragment((block_M, N), dtype)
            T.copy(A[bx * block_M, 0], t)
            for i, j in T.Parallel(block_M, N):
                t[i, j] = t[i, j] * alpha
            T.copy(t, B[bx * block_M, 0])

    return main
