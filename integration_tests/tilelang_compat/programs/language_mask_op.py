"""From TileLang's ``testing/python/language/test_tilelang_language_mask_op.py``: ``tilelang_copy_mask_parallel``, ``tilelang_copy_mask_copy``,
verbatim except the imports."""

import tl_jit.language as T


def tilelang_copy_mask_parallel(M, N, block_M, block_N, dtype=T.float16):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
    ):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            tx = T.get_thread_binding(0)

            if tx < 128:
                for i, k in T.Parallel(block_M, block_N):
                    A_shared[i, k] = A[by * block_M + i, bx * block_N + k]

            T.copy(A_shared, B[by * block_M, bx * block_N])

    return main


def tilelang_copy_mask_copy(M, N, block_M, block_N, dtype=T.float16):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
    ):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            tx = T.get_thread_binding(0)

            if tx < 128:
                T.copy(A[by * block_M, bx * block_N], A_shared)

            T.copy(A_shared, B[by * block_M, bx * block_N])

    return main
