"""Several ``T.Kernel`` blocks in one prim_func: consecutive launches."""

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir import kernel_launches
from tl_ir.interpret import run


def _scale_then_add(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 2.0
        with T.Kernel(1, threads=32) as bx:
            # Reads what every block of the first launch wrote.
            for i in T.serial(N):
                A[i] = B[N - 1 - i] + 1.0

    return main


def test_each_kernel_is_a_launch_in_program_order():
    func = _scale_then_add(64, 16)
    launches = kernel_launches(func)
    assert [tuple(int(g) for g in launch.grid) for _, launch in launches] == [(4,), (1,)]
    assert [launch.num_threads for _, launch in launches] == [16, 32]


def test_consecutive_kernels_run_one_after_the_other():
    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    run(_scale_then_add(64, 16), [a, b])
    np.testing.assert_array_equal(b, 2 * np.arange(64, dtype=np.float32))
    np.testing.assert_array_equal(a, b[::-1] + 1)


def test_single_launch_query_names_the_limit():
    with pytest.raises(NotImplementedError, match=r"2 T\.Kernel launches"):
        tl_ir.kernel_launch(_scale_then_add(64, 16))
