"""From TileLang's ``testing/python/cpu/test_tilelang_cpu_reduce.py``: ``_emit_reduce``, ``_make_kernel_2d``,
verbatim except the imports."""

import tl_jit.language as T


def _emit_reduce(T, op: str, src, dst, dim: int, clear: bool):
    if op == "sum":
        T.reduce_sum(src, dst, dim=dim, clear=clear)
    elif op == "max":
        T.reduce_max(src, dst, dim=dim, clear=clear)
    elif op == "min":
        T.reduce_min(src, dst, dim=dim, clear=clear)
    elif op == "abssum":
        T.reduce_abssum(src, dst, dim=dim)
    elif op == "absmax":
        T.reduce_absmax(src, dst, dim=dim, clear=clear)
    elif op == "bitand":
        T.reduce_bitand(src, dst, dim=dim, clear=clear)
    elif op == "bitor":
        T.reduce_bitor(src, dst, dim=dim, clear=clear)
    elif op == "bitxor":
        T.reduce_bitxor(src, dst, dim=dim, clear=clear)
    else:
        raise ValueError(op)


def _make_kernel_2d(op: str, M: int, N: int, dim: int, dtype: str, clear: bool):
    legal = dim if dim >= 0 else 2 + dim
    dst_shape = (N,) if legal == 0 else (M,)

    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        Init: T.Tensor(dst_shape, dtype),
        B: T.Tensor(dst_shape, dtype),
    ):
        with T.Kernel(1):
            src = T.alloc_local((M, N), dtype)
            dst = T.alloc_local(dst_shape, dtype)
            for i, j in T.grid(M, N):
                src[i, j] = A[i, j]
            for i in T.grid(dst_shape[0]):
                dst[i] = Init[i]
            _emit_reduce(T, op, src, dst, dim=legal, clear=clear)
            for i in T.grid(dst_shape[0]):
                B[i] = dst[i]

    return main
