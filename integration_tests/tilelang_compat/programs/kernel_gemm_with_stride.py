"""From TileLang's ``testing/python/kernel/test_tilelang_kernel_gemm_with_stride.py``: ``matmul``,
verbatim except the imports."""

import tl_jit.language as T


def matmul(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K * 2), dtype, scope="shared")
            B_shared = T.alloc_shared((block_K, block_N * 2), dtype, scope="shared")
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            # Clear local accumulation
            T.clear(C_local)
            T.clear(B_shared)
            T.clear(A_shared)

            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                # Copy tile of A
                # T.copy(A[by * block_M, ko * block_K], A_shared)
                for i, k in T.Parallel(block_M, block_K):
                    A_shared[i, k + block_K] = A[by * block_M + i, ko * block_K + k]

                # Copy tile of B
                # T.copy(B[ko * block_K, bx * block_N], B_shared)
                for i, k in T.Parallel(block_K, block_N):
                    B_shared[i, k] = B[ko * block_K + i, bx * block_N + k]

                # Perform a tile-level GEMM on the shared buffers
                # Currently we dispatch to the cute/hip on Nvidia/AMD GPUs
                T.gemm(A_shared[:, block_K:], B_shared[0:block_K, 0:block_N], C_local)

            # Copy result back to global memory
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main
