"""From TileLang's ``testing/python/language/test_tilelang_language_ceildiv.py``: ``_ceildiv_kernel``, ``_align_up_kernel``,
verbatim except the imports."""

import tl_jit as tilelang
import tl_jit.language as T


@tilelang.jit(out_idx=[-1])
def _ceildiv_kernel(a: int, b: int):
    @T.prim_func
    def ceildiv_kernel(A: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=1) as _:
            A[0] = T.ceildiv(T.int32(a), T.int32(b))

    return ceildiv_kernel


@tilelang.jit(out_idx=[-1])
def _align_up_kernel(a: int, b: int):
    @T.prim_func
    def align_up_kernel(A: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=1) as _:
            A[0] = T.align_up(T.int32(a), T.int32(b))

    return align_up_kernel
