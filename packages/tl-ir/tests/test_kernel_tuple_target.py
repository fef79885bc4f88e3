"""``with T.Kernel(n) as (bx,):`` binds the one block index (TileLang programs write
it); before, TVM's parser iterated the Var ("PrimType does not support subscript")."""

from __future__ import annotations

import numpy as np

import tl_ir.language as T
from tl_ir.interpret import run


def test_one_element_tuple_target_of_a_kernel() -> None:
    @T.prim_func
    def numbered(A: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as (bx,):
            A[bx] = T.Cast("float32", bx) + 1.0
        with T.Kernel(2, 2, threads=1) as (bx, by):
            A[bx * 2 + by] = A[bx * 2 + by] * 10.0
        with T.Kernel(4, threads=1) as bx:
            A[bx] = A[bx] + 0.5

    a = np.zeros(4, np.float32)
    run(numbered, [a])
    np.testing.assert_array_equal(a, [10.5, 20.5, 30.5, 40.5])
