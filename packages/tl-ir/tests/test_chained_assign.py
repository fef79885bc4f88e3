"""``a = b = c`` in a kernel: the value once, each target from left to right."""

import numpy as np

import tl_ir.language as T
from tl_ir.interpret import run


@T.prim_func
def stores(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32"), C: T.Tensor((8,), "int32")):
    with T.Kernel(1, threads=32):
        for i in T.Parallel(8):
            A[i] = B[i] = C[i] = i * 2


@T.prim_func
def names(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=32):
        for i in T.serial(8):
            x = y = A[i] + 1.0
            B[i] = x * y


def test_chained_stores_write_every_target():
    a, b, c = np.zeros(8, np.float32), np.zeros(8, np.float32), np.zeros(8, np.int32)
    run(stores, [a, b, c])
    for arr in (a, b, c):
        np.testing.assert_array_equal(arr, np.arange(8) * 2)


def test_chained_names_bind_the_same_value():
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    run(names, [a, b])
    np.testing.assert_array_equal(b, (a + 1) ** 2)
