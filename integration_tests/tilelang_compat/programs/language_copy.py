"""From TileLang's ``testing/python/language/test_tilelang_language_copy.py``: ``tilelang_copy``, ``tilelang_copy_oob_safe_value``, ``tilelang_elementwise_copy_oob_safe_value``,
verbatim except the imports."""

import tl_jit.language as T


def tilelang_copy(M, N, block_M, block_N, src_dtype=T.float16, dst_dtype=T.float16):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), src_dtype),
        B: T.Tensor((M, N), dst_dtype),
    ):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            T.copy(
                A[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N],
                B[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N],
            )

    return main


def tilelang_copy_oob_safe_value(
    M,
    N,
    padded_M,
    padded_N,
    block_M,
    block_N,
    src_dtype=T.float32,
    dst_dtype=T.float32,
    pad_value=None,
):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), src_dtype),
        B: T.Tensor((padded_M, padded_N), dst_dtype),
    ):
        with T.Kernel(T.ceildiv(padded_N, block_N), T.ceildiv(padded_M, block_M), threads=128) as (bx, by):
            if pad_value is not None:
                T.annotate_safe_value({A: pad_value})
            T.copy(
                A[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N],
                B[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N],
            )

    return main


def tilelang_elementwise_copy_oob_safe_value(M, N, padded_M, padded_N, dtype=T.float32, pad_value=-99):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((padded_M, padded_N), dtype),
    ):
        with T.Kernel(1, threads=128):
            T.annotate_safe_value({A: pad_value})
            for i, j in T.Parallel(padded_M, padded_N):
                T.copy(A[i, j], B[i, j])

    return main
