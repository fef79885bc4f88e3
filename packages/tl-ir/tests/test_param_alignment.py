"""Tensor parameters declare element alignment unless the kernel asks for more (``align=``)."""

from __future__ import annotations

import pytest

import tl_ir.language as T
from tl_ir.errors import UnknownDtypeError


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [("float16", 2), ("bfloat16", 2), ("float32", 4), ("float64", 8), ("int8", 1), ("bool", 1)],
)
def test_default_param_alignment_is_the_element_size(dtype: str, expected: int) -> None:
    assert T.param_alignment(dtype) == expected

    @T.prim_func
    def kernel(A: T.Tensor((8,), dtype), B: T.Buffer[(8,), dtype]):
        with T.Kernel(1, threads=1):
            for i in T.serial(8):
                B[i] = A[i]

    assert [int(p.ty.data_alignment) for p in kernel.params] == [expected, expected]


def test_an_explicit_align_is_kept() -> None:
    @T.prim_func
    def kernel(A: T.Tensor((8,), "float32", align=64), B: T.Tensor((8,), "float32", align=16)):
        with T.Kernel(1, threads=1):
            for i in T.serial(8):
                B[i] = A[i]

    assert [int(p.ty.data_alignment) for p in kernel.params] == [64, 16]


def test_param_alignment_names_an_unknown_dtype() -> None:
    with pytest.raises(UnknownDtypeError):
        T.param_alignment("float7")
