"""Loop steps count as Python's ``range`` (a negative step counts down: TVM's loops
ran it zero times); steps and constant sizes the kernel cannot hold are refused at
their line, naming what came (TVM failed later with "Loop step ... may not be
positive" or "Literal value ... exceeds range of int32", naming neither)."""

# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run


def _strided(step):
    @T.prim_func
    def main(C: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(0, 8, step):
                C[i] = 1

    return main


@pytest.mark.parametrize("step", [2, np.int64(2)])
def test_a_positive_constant_step_runs(step):
    c = np.zeros(8, np.int32)
    run(_strided(step), [c])
    assert c.tolist() == [1, 0] * 4


def _downward(start, stop, step, python_range):
    @T.prim_func
    def main(C: T.Tensor((10,), "int32"), n: T.int32):
        with T.Kernel(1, threads=1) as bx:
            if python_range:
                for i in range(start if start is not None else n, stop, step):
                    C[9 - i] = i + 100
            else:
                for i in T.serial(start if start is not None else n, stop, step):
                    C[9 - i] = i + 100

    return main


@pytest.mark.parametrize("python_range", [True, False])
@pytest.mark.parametrize(
    ("start", "stop", "step", "n"),
    [
        (9, -1, -1, 0),
        (9, -1, -3, 0),
        (8, 0, -3, 0),
        (None, -1, -2, 7),
        (None, 0, -1, -4),
        (3, 5, -1, 0),
    ],
)
def test_a_negative_step_counts_down_as_python_range(start, stop, step, n, python_range):
    c = np.full(10, -1, np.int32)
    run(_downward(start, stop, step, python_range), [c, np.int32(n)])
    expected = np.full(10, -1, np.int32)
    for i in range(start if start is not None else n, stop, step):
        expected[9 - i] = i + 100
    assert c.tolist() == expected.tolist()


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_a_negative_step_counts_down_when_compiled(target):
    import tl_jit

    c = np.full(10, -1, np.int32)
    tl_jit.compile(_downward(None, -1, -2, True), target=target)(c, np.int32(9))
    assert c.tolist() == [109, -1, 107, -1, 105, -1, 103, -1, 101, -1]


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (0, "expected a nonzero step, got 0"),
        (2.0, "expected an integer step, got 2.0"),
        (True, "expected an integer step, got True"),
    ],
)
def test_a_step_that_is_not_a_nonzero_int_is_refused(step, message):
    with pytest.raises(tl_ir.KernelTypeError, match=rf"T\.serial\(start, stop, step\): {message}"):
        _strided(step)


def test_a_run_time_step_of_python_range_is_refused_with_the_rewrite():
    with pytest.raises(tl_ir.KernelTypeError, match="expected a nonzero constant step, got s"):

        @T.prim_func
        def main(s: T.int32, C: T.Tensor((8,), "int32")):
            with T.Kernel(1, threads=1) as bx:
                for i in range(0, 8, s):
                    C[i] = 1


def test_a_run_time_step_is_refused_with_the_rewrite():
    with pytest.raises(tl_ir.KernelTypeError, match="expected a constant step, got the run-time"):

        @T.prim_func
        def main(s: T.int32, C: T.Tensor((8,), "int32")):
            with T.Kernel(1, threads=1) as bx:
                for i in T.serial(0, 8, s):
                    C[i] = 1


@pytest.mark.parametrize("size", [2**31, 2**63])
def test_a_constant_dim_beyond_int32_is_refused(size):
    with pytest.raises(tl_ir.KernelTypeError, match=r"expected dims of at most 2\*\*31 - 1"):

        @T.prim_func
        def main(A: T.Tensor((size,), "int8")):
            with T.Kernel(1, threads=1) as bx:
                A[0] = T.int8(0)


def test_floor_division_of_floats_is_named():
    # Was TVM's raw "Check failed: (a.ty().MatchesCode(DLDataTypeCode::kDLInt...".
    with pytest.raises(tl_ir.KernelTypeError, match=r"take integer operands, got a float"):

        @T.prim_func
        def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                for i in T.serial(4):
                    A[i] = A[i] // B[i]
