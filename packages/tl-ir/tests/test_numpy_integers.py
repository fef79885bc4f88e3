"""numpy integers (a builder argument taken from ``arr.shape[0]`` or ``np.int64(...)``)
are accepted wherever a Python int is, and build the same kernel."""

# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run


def _tiled_row_sum(M, N, block_m, threads, stages, dim, panel, width):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_m), threads=threads) as bx:
            T.use_swizzle(panel)
            tile = T.alloc_shared((block_m, N), "float32")
            acc = T.alloc_fragment((block_m,), "float32")
            for _k in T.Pipelined(1, num_stages=stages):
                T.copy(A[bx * block_m, 0], tile)
            T.reduce_sum(tile, acc, dim=dim)
            for i in T.Parallel(block_m):
                if bx * block_m + i < M:
                    B[bx * block_m + i] = acc[i]
            for _s in T.serial(width):
                B[0] = B[0] + T.float32(0)

    return main


PLAIN = dict(M=24, N=16, block_m=8, threads=32, stages=2, dim=1, panel=4, width=2)


@pytest.mark.parametrize("np_type", [np.int64, np.int32, np.uint16, np.intp])
def test_numpy_integers_build_the_kernel_python_ints_build(np_type):
    plain = _tiled_row_sum(**PLAIN)
    converted = _tiled_row_sum(**{k: np_type(v) for k, v in PLAIN.items()})
    assert converted.script() == plain.script()
    a = np.random.default_rng(0).standard_normal((24, 16)).astype(np.float32)
    b = np.zeros(24, np.float32)
    run(converted, [a, b])
    np.testing.assert_allclose(b, a.sum(1), rtol=1e-5, atol=1e-5)


def test_numpy_integers_in_a_layout_and_a_grid():
    layout = T.Layout([np.int64(4), np.int64(8)], lambda i, j: (j, i))
    assert layout.get_input_shape() == [4, 8]
    assert all(type(d) is int for d in layout.get_input_shape())
    assert [int(v) for v in layout.map_forward_index([np.int64(1), np.int64(2)])] == [2, 1]


@pytest.mark.parametrize("bad", [np.bool_(True), True, np.float64(8.0), 8.0])
def test_bools_and_floats_stay_refused_as_shapes(bad):
    with pytest.raises(tl_ir.KernelTypeError, match="expected every dim"):

        @T.prim_func
        def main(A: T.Tensor((bad,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                A[0] = T.float32(0)
