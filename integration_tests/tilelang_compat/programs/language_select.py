"""From TileLang's ``testing/python/language/test_tilelang_language_select.py``: ``get_select_kernel_1``, ``get_parallel_select_kernel``,
verbatim except the imports."""

import tl_jit as tilelang
import tl_jit.language as T


@tilelang.jit
def get_select_kernel_1():
    @T.prim_func
    def main(
        A: T.Tensor[(128, 8), T.float32],
        B: T.Tensor[(128, 8), T.float32],
    ):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            tmp = T.alloc_var(T.bfloat16)
            tmp = A[tx, 3]

            B[tx, 0] = T.Select(True, A[tx, 0], 0.0)
            B[tx, 1] = T.Select(False, 1.0, A[tx, 1])
            B[tx, 2] = T.Select(T.cast(A[tx, 3], T.bfloat16) == tmp, A[tx, 2], T.cast(tmp, T.float32))
            B[tx, 3] = T.Select(B[tx, 0] != 0.0, T.if_then_else(B[tx, 1] != 0.0, A[tx, 3], 0.0), 0.0)

            for i in T.serial(4):
                B[tx, i + 4] = T.Select(
                    A[tx, 0] == 0, T.if_then_else(T.Select(True, False, True), 1.0, 2.0), T.Select(True, A[tx, i + 4], 3.0)
                )

    return main


@tilelang.jit
def get_parallel_select_kernel():
    @T.prim_func
    def main(
        A: T.Tensor[(1024,), T.float32],
        B: T.Tensor[(1024,), T.float32],
    ):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(1024):
                B[i] = T.Select(i < 512, A[i], 0.0)

    return main
