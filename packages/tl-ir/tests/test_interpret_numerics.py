"""The reference interpreter computes as the targets do: bfloat16 arithmetic on values
(it added the raw uint16 bits: 1 + 1 gave 32512), a float16 tile reduced into float32
accumulates in float32 (it overflowed at 65504), and a float32 literal is the float32
it denotes (16777217.0 stayed exact)."""

# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
import ml_dtypes
import numpy as np

import tl_ir.language as T
from tl_ir.interpret import run


def test_bfloat16_arithmetic_on_values():
    @T.prim_func
    def double(A: T.Tensor((4,), "bfloat16"), B: T.Tensor((4,), "bfloat16")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(4):
                B[i] = A[i] + A[i] * T.bfloat16(0.1)

    a = np.array([1, 2, 3, -1], ml_dtypes.bfloat16)
    expected = (a + (a * ml_dtypes.bfloat16(0.1)).astype(ml_dtypes.bfloat16)).astype(
        ml_dtypes.bfloat16
    )
    for pass_bits in (False, True):  # an ml_dtypes array, or its uint16 bits
        b = np.zeros(4, ml_dtypes.bfloat16)
        run(double, [a.view(np.uint16) if pass_bits else a, b.view(np.uint16) if pass_bits else b])
        np.testing.assert_array_equal(b.astype(np.float32), expected.astype(np.float32))


def test_a_float16_tile_sums_into_float32():
    @T.prim_func
    def total(A: T.Tensor((1, 8), "float16"), S: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            tile = T.alloc_fragment((1, 8), "float16")
            acc = T.alloc_fragment((1,), "float32")
            T.copy(A, tile)
            T.reduce_sum(tile, acc, dim=1)
            T.copy(acc, S)

    s = np.zeros(1, np.float32)
    run(total, [np.full((1, 8), 30000, np.float16), s])
    assert s.tolist() == [240000.0]


def test_a_float32_literal_is_a_float32():
    @T.prim_func
    def shift(A: T.Tensor((3,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(3):
                A[i] = A[i] + T.float32(16777217.0)

    a = np.array([1, 2, -3], np.float32)
    run(shift, [a])
    np.testing.assert_array_equal(a, np.array([1, 2, -3], np.float32) + np.float32(16777217.0))


def test_float_constants_at_the_edges_of_their_types():
    # T.float32(3.4028235e38) (FLT_MAX as numpy prints it) and T.float64(1.79e308) were
    # refused: TVM's constructors went through a float32 literal.
    assert float(T.float32(3.4028235e38).value) == float(np.finfo(np.float32).max)
    assert float(T.float64(1.7976931348623157e308).value) == float(np.finfo(np.float64).max)
    assert float(T.float32(0.1).value) == float(np.float32(0.1))
