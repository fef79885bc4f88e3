"""From TileLang's ``testing/python/kernel/test_tilelang_kernel_gemm_batched.py``: ``matmul_batched``,
verbatim except the imports."""

import tl_jit.language as T


def matmul_batched(
    batch,
    M,
    N,
    K,
    block_M,
    block_N,
    block_K,
    trans_A,
    trans_B,
    in_dtype,
    out_dtype,
    accum_dtype,
    num_stages,
    threads,
):
    A_shape = (batch, K, M) if trans_A else (batch, M, K)
    B_shape = (batch, N, K) if trans_B else (batch, K, N)
    A_shared_shape = (batch, block_K, block_M) if trans_A else (batch, block_M, block_K)
    B_shared_shape = (batch, block_N, block_K) if trans_B else (batch, block_K, block_N)

    @T.prim_func
    def main(
        A: T.Tensor(A_shape, in_dtype),
        B: T.Tensor(B_shape, in_dtype),
        C: T.Tensor((batch, M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype)
            B_shared = T.alloc_shared(B_shared_shape, in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.disable_warp_group_reg_alloc()
            for b in T.serial(batch):
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    if trans_A:
                        T.copy(A[b, k * block_K, by * block_M], A_shared[b, :, :])
                    else:
                        T.copy(A[b, by * block_M, k * block_K], A_shared[b, :, :])
                    if trans_B:
                        T.copy(B[b, bx * block_N, k * block_K], B_shared[b, :, :])
                    else:
                        T.copy(B[b, k * block_K, bx * block_N], B_shared[b, :, :])
                    T.gemm(A_shared[b, :, :], B_shared[b, :, :], C_local, trans_A, trans_B)
                T.copy(C_local, C[b, by * block_M, bx * block_N])

    return main
