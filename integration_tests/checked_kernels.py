"""Kernels with out-of-bounds accesses, for the checked-mode and interpreter tests.

The line numbers of the faulty accesses are part of what the tests check: keep them.
"""

import tl_jit.language as T


def writes_past_the_end(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=1) as _bx:
            for i in T.serial(N + 4):
                B[i] = A[i] * 2.0  # line 14: i reaches N + 3

    return main


def reads_before_the_start(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=1) as bx:
            for j in T.Parallel(N):
                B[bx, j] = A[bx, j - 1]  # line 24: j - 1 is -1 at j = 0

    return main


def in_bounds(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=1) as bx:
            for j in T.Parallel(N):
                B[bx, j] = A[bx, N - 1 - j] + 1.0

    return main
