"""T.annotate_safe_value: tile copies out of an annotated buffer read the given value
where the tile hangs over the buffer's edge (TileLang's meaning)."""

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run
from tl_ir.ops import CopyOp, tile_ops


def _padded_copy(pad_value, dst_dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((10, 7), "float32"), B: T.Tensor((16, 8), dst_dtype)):
        with T.Kernel(2, 2, threads=32) as (bx, by):
            if pad_value is not None:
                T.annotate_safe_value({A: pad_value})
            T.copy(A[by * 8 : (by + 1) * 8, bx * 4 : (bx + 1) * 4], B[by * 8, bx * 4])

    return main


def _expected(a, pad, dtype=np.float32):
    want = np.full((16, 8), pad, dtype)
    want[:10, :7] = a
    return want


@pytest.mark.parametrize(("pad", "dtype"), [(7.0, "float32"), (-99, "int32")])
def test_out_of_bounds_tile_reads_give_the_safe_value(pad, dtype):
    a = np.random.default_rng(0).standard_normal((10, 7)).astype(np.float32)
    b = np.zeros((16, 8), dtype)
    run(_padded_copy(pad, dtype), [a, b])
    np.testing.assert_array_equal(b, _expected(a, pad).astype(dtype))


def test_annotated_copy_is_an_element_loop_and_others_stay_tile_copies():
    assert not any(isinstance(op, CopyOp) for op in tile_ops(_padded_copy(1.0)))
    assert any(isinstance(op, CopyOp) for op in tile_ops(_padded_copy(None)))


def test_elementwise_copies_and_stores_outside_dst_are_skipped():
    @T.prim_func
    def main(A: T.Tensor((5, 3), "float32"), B: T.Tensor((6, 4), "float32")):
        with T.Kernel(1, threads=32):
            T.annotate_safe_value({A: -1.5})
            for i, j in T.Parallel(8, 8):  # past both A and B
                T.copy(A[i, j], B[i, j])

    a = np.arange(15, dtype=np.float32).reshape(5, 3)
    b = np.zeros((6, 4), np.float32)
    run(main, [a, b])
    want = np.full((6, 4), -1.5, np.float32)
    want[:5, :3] = a
    np.testing.assert_array_equal(b, want)


def test_only_copies_out_of_the_annotated_buffer_change():
    @T.prim_func
    def main(
        A: T.Tensor((4,), "float32"), C: T.Tensor((4,), "float32"), B: T.Tensor((8,), "float32")
    ):
        with T.Kernel(1, threads=32):
            T.annotate_safe_value({C: 3.0})
            T.copy(A, B[0:4])
            T.copy(C[2:6], B[4:8])

    a = np.arange(4, dtype=np.float32)
    c = np.arange(10, 14, dtype=np.float32)
    b = np.zeros(8, np.float32)
    run(main, [a, c, b])
    np.testing.assert_array_equal(b, [0, 1, 2, 3, 12, 13, 3, 3])


def test_bad_annotations_are_clear_errors():
    def build(mapping):
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                T.annotate_safe_value(mapping(A))

    with pytest.raises(tl_ir.KernelTypeError, match=r"expected a dict \{buffer: value\}"):
        build(lambda a: [a])
    with pytest.raises(tl_ir.KernelTypeError, match="expected buffer keys"):
        build(lambda a: {"A": 1.0})
    with pytest.raises(tl_ir.KernelTypeError, match="the value for A must be a scalar"):
        build(lambda a: {a: "zero"})
    with pytest.raises(tl_ir.ScopeError, match=r"only allowed inside a @T\.prim_func"):
        T.annotate_safe_value({})
