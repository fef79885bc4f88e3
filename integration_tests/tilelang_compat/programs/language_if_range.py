"""From TileLang's ``testing/python/language/test_tilelang_language_if_range.py``: ``tilelang_if_range``,
verbatim except the imports."""

import tl_jit as tilelang
import tl_jit.language as T


@tilelang.jit(
    out_idx=[1],
)
def tilelang_if_range(M, N, block_M, block_N, dtype=T.float16):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
    ):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                row_idx = by * block_M + i
                col_idx = bx * block_N + j
                # Test condition: ca < i < cb where ca=16, cb=96
                if 16 < row_idx < 96:
                    B[row_idx, col_idx] = A[row_idx, col_idx] * 2.0
                else:
                    B[row_idx, col_idx] = A[row_idx, col_idx] * 0.5

    return main
