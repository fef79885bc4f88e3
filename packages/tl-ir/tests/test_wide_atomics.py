"""T.atomic_addx2 / T.atomic_addx4: TileLang's paired and quad atomic adds along the last
dim, each element's update atomic."""

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run
from tl_ir.ops import AtomicOp, tile_ops


@pytest.mark.parametrize("width", [2, 4])
@pytest.mark.parametrize("as_region", [False, True])
def test_wide_atomic_adds_width_neighbours(width, as_region):
    add = T.atomic_addx2 if width == 2 else T.atomic_addx4

    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32")):
        with T.Kernel(2, threads=32):
            for i, j in T.Parallel(4, 8 // width):
                if as_region:
                    add(B[i, j * width : j * width + width], A[i, j * width : j * width + width])
                else:
                    add(B[i, j * width], A[i, j * width])

    (op,) = tile_ops(main)
    assert isinstance(op, AtomicOp) and op.kind == "add"
    assert [int(e) for e in op.dst.extents] == [1, width]
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.ones((4, 8), np.float32)
    run(main, [a, b])
    np.testing.assert_array_equal(b, 1 + 2 * a)  # two blocks, each adds A once


def test_wide_atomic_errors():
    def build(dst, value, **kw):
        @T.prim_func
        def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                T.atomic_addx2(dst(B), value(A), **kw)

    with pytest.raises(tl_ir.ShapeMismatchError, match="a run of 2 elements, got B"):
        build(lambda b: b[0:4], lambda a: a[0])
    with pytest.raises(tl_ir.UnsupportedError, match="return_prev=True"):
        build(lambda b: b[0], lambda a: a[0], return_prev=True)
