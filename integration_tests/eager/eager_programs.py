"""Eager-style kernels: TileLang's own eager tests (verbatim kernels, only the imports
differ) and the suite's GEMM, softmax and RMS norm written in the eager style.

From TileLang's ``testing/python/language/test_tilelang_language_eager_jit.py`` and
``test_tilelang_language_frontend_v2.py``.
"""

from __future__ import annotations

import tl_jit as tilelang
import tl_jit.language as T

# ---------------------------------------------------------------- test_jit2_gemm


@tilelang.jit(verbose=True)
def gemm(
    A,
    B,
    C,
    dtype: T.dtype = T.float16,
    accum_dtype: T.dtype = T.float32,
    block_M: int = 64,
    block_N: int = 64,
    block_K: int = 64,
):
    M, N, K = T.const("M N K")

    A: T.Tensor[[M, K], dtype]
    B: T.Tensor[[K, N], dtype]
    C: T.Tensor[[M, N], dtype]

    with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N)) as (by, bx):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)

        T.copy(C_local, C[by * block_M, bx * block_N])


# ---------------------------------------------------------------- test_jit2_gemm_ptr


@tilelang.jit
def gemm_ptr(
    A: T.ptr,
    B: T.ptr,
    C: T.ptr,
    M: int,
    N: int,
    K: int,
    dtype: T.dtype,
    out_dtype: T.dtype,
    block_M: int = 64,
    block_N: int = 64,
    block_K: int = 32,
):
    A = T.make_tensor(A, (M, K), dtype)
    B = T.make_tensor(B, (K, N), dtype)
    C = T.make_tensor(C, (M, N), out_dtype)
    with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), out_dtype)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[bx * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, by * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[bx * block_M, by * block_N])


# ---------------------------------------------------------------- test_jit2_many_annot


@T.macro
def copy_impl(A, B):
    M, N = A.shape
    M_, N_ = B.shape
    assert M == M_, f"M mismatch {M} {M_}"
    assert N == N_, f"N mismatch {N} {N_}"
    # assert tuple(A.shape) == tuple(B.shape), f"Invalid tensor shape: {A.shape}, {B.shape}"
    with T.Kernel(T.ceildiv(M, 128), T.ceildiv(N, 128), threads=128) as (bx, by):
        T.copy(
            A[bx * 128 : bx * 128 + 128, by * 128 : by * 128 + 128],
            B[bx * 128 : bx * 128 + 128, by * 128 : by * 128 + 128],
        )


@tilelang.jit
def copy1(A, B):
    N, M = T.const("N, M")
    A: T.Tensor[[N, M], T.float32]
    B: T.Tensor[[N, M], T.float32]
    copy_impl(A, B)


@tilelang.jit
def copy2(
    A: T.Tensor[[128, 128], T.float32],
    B: T.Tensor[[128, 128], T.float32],
):
    copy_impl(A, B)


@tilelang.jit
def copy3(A, B):
    N = T.const("N")
    A: T.Tensor[[N, 128], T.float32]
    B: T.Tensor[[N, 128], T.float32]
    copy_impl(A, B)


@tilelang.jit
def copy4(A, B):
    N = T.dynamic("N")
    M = T.const("M")
    A: T.Tensor[[N, M], T.float32]
    B: T.Tensor[[N, M], T.float32]
    copy_impl(A, B)


@tilelang.jit
def copy5(A, B):
    N, M, N_, M_ = T.const("N, M, N_, M_")
    A: T.StridedTensor[[N, M], [N_, M_], T.float32]
    B: T.StridedTensor[[N, M], [N_, M_], T.float32]
    copy_impl(A, B)


@tilelang.jit
def copy6(A, B):
    N = T.dynamic("N")
    M, N_, M_ = T.const("M, N_, M_")
    A: T.StridedTensor[[N, M], [N_, M_], T.float32]
    B: T.StridedTensor[[N, M], [N_, M_], T.float32]
    copy_impl(A, B)


# ---------------------------------------------------------------- test_jit2_return


@T.macro
def copy_impl_return(A):
    M, N = A.shape
    B = T.empty(M, N, dtype=A.dtype)
    with T.Kernel(T.ceildiv(M, 128), T.ceildiv(N, 128), threads=128) as (bx, by):
        T.copy(
            A[bx * 128 : bx * 128 + 128, by * 128 : by * 128 + 128],
            B[bx * 128 : bx * 128 + 128, by * 128 : by * 128 + 128],
        )
    return B


@tilelang.jit
def return1(A):
    M, N = T.const("M, N")
    A: T.Tensor[[M, N], T.float32]
    return copy_impl_return(A)


@tilelang.jit
def return2(A):
    A: T.Tensor[[128, 128], T.float32]
    return copy_impl_return(A)


@tilelang.jit
def return3(A):
    N = T.const("N")
    A: T.Tensor[[N, 128], T.float32]
    return copy_impl_return(A)


@tilelang.jit
def return4(A):
    N = T.dynamic("N")
    M = T.const("M")
    A: T.Tensor[[N, M], T.float32]
    return copy_impl_return(A)


@tilelang.jit
def return5(A):
    N, M, N_, M_ = T.const("N, M, N_, M_")
    A: T.StridedTensor[[N, M], [N_, M_], T.float32]
    return copy_impl_return(A)


@tilelang.jit
def return6(A):
    N = T.dynamic("N")
    M, N_, M_ = T.const("M, N_, M_")
    A: T.StridedTensor[[N, M], [N_, M_], T.float32]
    return copy_impl_return(A)


# ---------------------------------------------------------------- test_jit2_compile_with_consts


@tilelang.jit
def transpose(X, Y, block_M, block_N):
    M, N = T.const("M N")
    X: T.Tensor[[M, N], T.float32]
    Y: T.Tensor[[N, M], T.float32]

    with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=128) as (bx, by):
        X_tile = T.alloc_shared((block_M, block_N), T.float32)
        Y_tile = T.alloc_shared((block_N, block_M), T.float32)

        T.copy(X[bx * block_M, by * block_N], X_tile)
        for i, j in T.Parallel(block_M, block_N):
            Y_tile[j, i] = X_tile[i, j]
        T.copy(Y_tile, Y[by * block_N, bx * block_M])


# ---------------------------------------------------------------- frontend_v2


@tilelang.jit
def test_var_assign():
    A = T.empty((2,), T.int32)
    with T.Kernel(1) as _:
        a: T.int32 = 1
        b: T.int32 = a
        a = 2
        d: T.int32 = a
        A[0] = b
        A[1] = d
    return A


@tilelang.jit
def swap_var(A):
    A: T.Tensor[(2,), T.float32]
    with T.Kernel(1, threads=1) as _:
        a = T.alloc_var(T.float32, A[0])
        b = T.alloc_var(T.float32, A[1])
        a, b = b, a
        A[0], A[1] = a, b


@tilelang.jit
def swap_idx(A):
    A: T.Tensor[(2,), T.float32]
    with T.Kernel(1, threads=1) as _:
        A[0], A[1] = A[1], A[0]


@tilelang.jit
def while_loop():
    A = T.empty((1,), T.int32)
    with T.Kernel(1) as _:
        i = T.alloc_var(T.int32, 0)
        sum = T.alloc_var(T.int32)
        while i < 10:
            sum += i
            i += 1
        A[0] = sum
    return A


@tilelang.jit
def probe(A, tmp: bool):
    A: T.Tensor[(2,), T.int32]
    with T.Kernel(1):
        if tmp:  # noqa: SIM108 - TileLang's kernel, verbatim
            v = A[0]
        else:
            v = A[1]
        if tmp:
            A[1] = v + 1
        else:
            A[0] = v + 1


# ---------------------------------------------------------------- the suite's kernels, eager


@tilelang.jit
def eager_gemm(
    A,
    B,
    dtype: T.dtype = T.float32,
    accum_dtype: T.dtype = T.float32,
    block_M: int = 32,
    block_N: int = 32,
    block_K: int = 16,
):
    M, N, K = T.const("M N K")
    A: T.Tensor[[M, K], dtype]
    B: T.Tensor[[K, N], dtype]
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


@tilelang.jit
def eager_softmax(X, dtype: T.dtype = T.float32, block_M: int = 16):
    M, N = T.const("M N")
    X: T.Tensor[[M, N], dtype]
    Y = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        x = T.alloc_fragment((block_M, N), dtype)
        row_max = T.alloc_fragment((block_M,), dtype)
        row_sum = T.alloc_fragment((block_M,), dtype)
        T.copy(X[bx * block_M, 0], x)
        T.reduce_max(x, row_max, dim=1)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = T.exp(x[i, j] - row_max[i])
        T.reduce_sum(x, row_sum, dim=1)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = x[i, j] / row_sum[i]
        T.copy(x, Y[bx * block_M, 0])
    return Y


@tilelang.jit
def eager_rms_norm(X, W, eps: float = 1e-6, block_M: int = 16):
    M, N = T.const("M N")
    X: T.Tensor[[M, N], T.float32]
    W: T.Tensor[[N], T.float32]
    Y = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        x = T.alloc_fragment((block_M, N), T.float32)
        sq = T.alloc_fragment((block_M, N), T.float32)
        w = T.alloc_shared((N,), T.float32)
        ss = T.alloc_fragment((block_M,), T.float32)
        T.copy(X[bx * block_M, 0], x)
        T.copy(W, w)
        for i, j in T.Parallel(block_M, N):
            sq[i, j] = x[i, j] * x[i, j]
        T.reduce_sum(sq, ss, dim=1)
        for i in T.Parallel(block_M):
            ss[i] = T.rsqrt(ss[i] / T.float32(N) + T.float32(eps))
        for i, j in T.Parallel(block_M, N):
            x[i, j] = x[i, j] * ss[i] * w[j]
        T.copy(x, Y[bx * block_M, 0])
    return Y


# ---------------------------------------------------------------- test_serial_for_with_step


@tilelang.jit
def stepped_serial():
    A = T.empty((10,), T.int32)
    with T.Kernel(1) as _:
        for i in range(0, 10, 2):
            T.device_assert(0 <= i < 10 and i % 2 == 0, "i out of range")
            A[i] = 1.0
        for i in range(1, 10, 2):
            T.device_assert(1 <= i < 10 and i % 2 == 1, "i out of range")
            A[i] = 2.0
    return A


@tilelang.jit
def stepped_serial_neg():
    A = T.empty((10,), T.int32)
    with T.Kernel(1) as _:
        for i in range(10, 0, -1):
            T.device_assert(0 < i <= 10, "i out of range")
            A[10 - i] = i
    return A
