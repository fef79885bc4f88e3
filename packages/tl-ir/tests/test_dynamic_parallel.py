"""T.Parallel over a run-time extent with a compile-time upper bound: the loop covers
the bound and its body runs below the run-time extent."""

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run
from tl_ir.launch import loop_kind


def _minus_one(through_scalar):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(64):
                B[i] = 0.0
            if through_scalar:
                span = T.min(n, 64)
                for i in T.Parallel(span):
                    B[i] = A[i] - 1.0
            else:
                for i in T.Parallel(T.min(n, 64)):
                    B[i] = A[i] - 1.0

    return main


@pytest.mark.parametrize("through_scalar", [False, True])
@pytest.mark.parametrize("n", [0, 10, 64, 1000])
def test_runtime_extent_runs_below_it(through_scalar, n):
    a = np.arange(64, dtype=np.float32)
    b = np.full(64, 7.0, np.float32)
    run(_minus_one(through_scalar), [a, b, n])
    np.testing.assert_array_equal(b, np.where(np.arange(64) < n, a - 1.0, 0.0))


def test_loop_covers_the_bound_and_stays_parallel():
    import tvm_ffi
    from tvm import tirx

    loops = []
    tvm_ffi.structural_walk(_minus_one(True).body, (tirx.For, loops.append), order="pre")
    assert [(int(f.extent), loop_kind(f)) for f in loops] == [(64, "parallel"), (64, "parallel")]


def test_two_dims_one_of_them_runtime():
    @T.prim_func
    def main(A: T.Tensor((4, 16), "float32"), rows: T.int32):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(T.min(rows, 4), 16):
                A[i, j] = A[i, j] + 1.0

    a = np.zeros((4, 16), np.float32)
    run(main, [a, 3])
    np.testing.assert_array_equal(a, np.where(np.arange(4)[:, None] < 3, 1.0, 0.0) + 0 * a)


def test_unbounded_runtime_extent_is_a_clear_error():
    with pytest.raises(tl_ir.KernelTypeError, match="run-time extent n has no compile-time"):

        @T.prim_func
        def main(A: T.Tensor((64,), "float32"), n: T.int32):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(n):
                    A[i] = 1.0

    with pytest.raises(tl_ir.KernelTypeError, match="run-time extent span has no compile-time"):

        @T.prim_func
        def through_scalar(A: T.Tensor((64,), "float32"), n: T.int32):
            with T.Kernel(1, threads=32):
                span = n * 2
                for i in T.Parallel(span):
                    A[i] = 1.0

    with pytest.raises(tl_ir.KernelTypeError, match="extent 0 must be an integer"):
        T.Parallel(1.5)


def test_a_bound_through_a_scalar_assigned_twice_uses_only_what_is_read_directly():
    # `end - start` is 40 at the loop (start moved back by 8 after end was computed);
    # substituting `end = start + 32` would mix the two values of start and prove 32.
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"), s: T.int32):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(64):
                B[i] = -1.0
            start = T.alloc_var("int32")
            start = s
            end = start + 32
            start = start - 8
            for i in T.Parallel(T.min(end - start, 64)):
                B[i] = A[start + i]

    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    run(main, [a, b, 16])
    np.testing.assert_array_equal(b, np.where(np.arange(64) < 40, a + 8, -1.0))
