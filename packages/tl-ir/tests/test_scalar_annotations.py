"""A scalar parameter declared with any spelling of a dtype (``x: dt`` with ``dt`` a
string, a numpy or torch dtype) is that dtype's scalar, as ``x: T.float32`` is."""

# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
import numpy as np
import pytest

import tl_ir
import tl_ir.language as T


def _scaled(dt):
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), x: dt):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(4):
                A[i] = A[i] * T.cast(x, "float32")

    return main


SPELLINGS = ["float16", "float32", "int8", np.float32, np.dtype("float64"), float, "half"]


@pytest.mark.parametrize("spelling", SPELLINGS, ids=repr)
def test_every_dtype_spelling_declares_the_scalar(spelling):
    expected = T.dtype(spelling)
    assert str(_scaled(spelling).params[1].ty.dtype) == str(expected)
    assert _scaled(spelling).script() == _scaled(expected).script()


def test_a_torch_dtype_declares_the_scalar():
    torch = pytest.importorskip("torch")
    assert str(_scaled(torch.bfloat16).params[1].ty.dtype) == "bfloat16"


def test_an_unknown_dtype_name_is_named():
    with pytest.raises(tl_ir.UnknownDtypeError, match="dtype 'float33' does not exist"):
        _scaled("float33")


@pytest.mark.parametrize("bad", [None, 32, np.complex64, object], ids=repr)
def test_a_value_that_is_no_dtype_is_refused_as_an_annotation(bad):
    with pytest.raises(tl_ir.KernelTypeError, match=r"parameter annotation: expected T\.Tensor"):
        _scaled(bad)
