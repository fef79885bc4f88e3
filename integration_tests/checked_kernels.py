"""Kernels with out-of-bounds accesses, for the checked-mode and interpreter tests.

The accesses are to shared tiles: an element access of a global buffer is guarded by
its bounds (as in TileLang), so it cannot leave the buffer. The index that leaves its tile
is one the build cannot bound exactly (``T.min``): an index that certainly leaves it is
refused when the kernel is built (`tl_ir.tile_bounds`).

The line numbers of the faulty accesses are part of what the tests check: keep them.
"""

import tl_jit.language as T


def writes_past_the_end(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=1) as _bx:
            B = T.alloc_shared((N,), "float32")
            for i in T.serial(N + 4):
                B[T.min(i, N + 3)] = A[i] * 2.0  # line 20: i reaches N + 3 (a tile)
            T.copy(B, C)

    return main


def reads_before_the_start(M, N):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=1) as bx:
            A = T.alloc_shared((M, N), "float32")
            T.copy(X, A)
            for j in T.Parallel(N):
                B[bx, j] = A[bx, j - 1]  # line 33: j - 1 is -1 at j = 0 (a tile)

    return main


def in_bounds(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=1) as bx:
            for j in T.Parallel(N):
                B[bx, j] = A[bx, N - 1 - j] + 1.0

    return main


def atomic_rows_at_an_offset(M, N, block):
    @T.prim_func
    def main(
        X: T.Tensor((M, N), "float32"),
        Offs: T.Tensor((2,), "int32"),
        Y: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(M, block), 2, threads=32) as (bx, bz):
            start = Offs[bz]
            f = T.alloc_fragment((block, N), "float32")
            T.copy(X[bx * block : (bx + 1) * block, :], f)
            T.atomic_add(Y[start + bx * block : start + (bx + 1) * block, :], f)

    return main


def slices_at_a_run_time_offset(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), n: T.int32, m: T.int32):
        with T.Kernel(1, threads=1):
            S = T.alloc_shared((N,), "float32")
            S[0:N] = A[0:N]
            B[n : n + 4] = S[0:4]  # line 70: a store of four lanes from n
            B[0:4] = S[m : m + 4]  # line 71: a read of four lanes from m

    return main
