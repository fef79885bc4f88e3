"""``T.dp4a(A, B, C)`` accumulates the four-element int8 dot product into the int32
``C`` (TileLang's meaning). It used to be TVM's expression of the same name, which a
statement dropped: ``C`` stayed unchanged, and any dtype was accepted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from tl_ir.errors import KernelTypeError


def _dots() -> Any:
    @T.prim_func
    def dots(A: T.Tensor((8,), "int8"), B: T.Tensor((2, 4), "int8"), C: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=1):
            T.dp4a(A, B, C)
            T.dp4a(A[4], B[1, 0], C[1])

    return dots


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
def test_dp4a_accumulates_the_dot_product(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
    kernel = tl_jit.compile(_dots(), target="c" if target == "interpreter" else target)
    a = np.array([3, 2, 1, 5, -128, 127, -128, 1], np.int8)
    b = np.array([[-1, 2, 3, 1], [-128, -128, 127, 9]], np.int8)
    c = np.array([10, 7], np.int32)
    kernel(a, b, c)
    wide_a, wide_b = a.astype(np.int64).reshape(2, 4), b.astype(np.int64)
    np.testing.assert_array_equal(c, np.array([10, 7]) + (wide_a * wide_b).sum(axis=1))


def test_dp4a_checks_its_dtypes() -> None:
    with pytest.raises(KernelTypeError, match=r"expected C to be int32, got C of int8"):

        @T.prim_func
        def wrong(A: T.Tensor((4,), "int8"), C: T.Tensor((4,), "int8")):
            with T.Kernel(1, threads=1):
                T.dp4a(A, A, C)
