"""`T.cast` of a constant is computed when the kernel is parsed (`tl_ir.constant_casts`)."""

from __future__ import annotations

import math

import pytest
from tvm import tirx

import tl_ir.language as T
from tl_ir.constant_casts import constant_cast


@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        (200, "int8", -56),
        (-1, "uint16", 65535),
        (-1, "uint64", 2**64 - 1),
        (3e9, "int32", 2147483647),
        (-2.5, "uint32", 0),
        (130.7, "int8", 127),
        (float("nan"), "int8", 0),
        (2, "bool", 1),
        (1e6, "float16", math.inf),
        (1e39, "bfloat16", math.inf),
        (1.00390625, "bfloat16", 1.0),
    ],
)
def test_a_cast_constant_is_the_converted_constant(
    value: float, dtype: str, expected: float
) -> None:
    folded = constant_cast(value, dtype)
    assert isinstance(folded, tirx.IntImm | tirx.FloatImm)
    assert str(folded.ty.dtype) == dtype
    assert folded.value == expected


def test_a_cast_of_a_variable_stays_a_cast() -> None:
    x = tirx.Var("x", "int32")
    assert isinstance(constant_cast(x, "int8"), tirx.Cast)


def test_a_kernel_cast_of_a_constant_is_parsed_as_the_constant() -> None:
    @T.prim_func
    def kernel(Out: T.Tensor((4,), "int8")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                Out[i] = T.cast(200, "int8")

    assert "T.int8(-56)" in kernel.script()


def test_a_python_float_keeps_its_double_value() -> None:
    # Not first rounded to float32: T.cast(0.1, "float64") is the double 0.1, as TVM
    # folds it on every target (the interpreter gave 0.10000000149).
    import numpy as np

    assert float(constant_cast(0.1, "float64").value) == 0.1
    assert float(constant_cast(0.1, "float32").value) == float(np.float32(0.1))
