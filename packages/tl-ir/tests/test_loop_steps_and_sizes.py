"""Loop steps and constant sizes the kernel cannot hold are refused at their line, naming
what came (TVM failed later with "Loop step ... may not be positive" or "Literal value
... exceeds range of int32", naming neither)."""

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


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (0, "expected a positive step, got 0"),
        (-1, "expected a positive step, got -1"),
        (2.0, "expected an integer step, got 2.0"),
        (True, "expected an integer step, got True"),
    ],
)
def test_a_step_that_is_not_a_positive_int_is_refused(step, message):
    with pytest.raises(tl_ir.KernelTypeError, match=rf"T\.serial\(start, stop, step\): {message}"):
        _strided(step)


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
