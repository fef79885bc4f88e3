"""An ``if`` nested in one branch of another inside a loop nest keeps its place.

TVM's ``s_tir.HoistIfThenElse`` moved ``if i < 2`` out of the ``else`` branch of
``if bx == 1`` and out of the loops into both branches, so on the CPU targets the
``bx == 1`` branch ran for rows ``i < 2`` only (an ``if``/``elif`` in a ``T.Parallel``
nest; found by the tile fuzz). Backends lower with it off
(`tl_backend_api.tvm_lowering.sound_lowering`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit.language as T
from integration_tests.interpreter_target import compile_for

TARGETS = ["c", "llvm", "interpreter"]


def _if_elif() -> Any:
    @T.prim_func
    def if_elif(X: T.Tensor((8, 2), "float32"), Y: T.Tensor((8, 2), "float32")):
        with T.Kernel(2, threads=32) as bx:
            for i, j in T.Parallel(4, 2):
                if bx == 1:
                    Y[bx * 4 + i, j] = X[bx * 4 + i, j] * 2
                elif i < 2:
                    Y[bx * 4 + i, j] = X[bx * 4 + i, j] + 1

    return if_elif


def _data_dependent() -> Any:
    @T.prim_func
    def data_dependent(X: T.Tensor((4, 3), "float32"), Y: T.Tensor((4, 3), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                for j in T.serial(3):
                    if X[0, 0] > 100.0:
                        Y[i, j] = X[i, j] * 2
                    else:
                        if i < 2:
                            Y[i, j] = X[i, j] + 1

    return data_dependent


@pytest.mark.parametrize("target", TARGETS)
def test_an_if_in_the_else_branch_stays_there(target: str) -> None:
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    y = np.full((8, 2), 7, np.float32)
    compile_for(_if_elif(), target)(x, y)
    expected = np.full((8, 2), 7, np.float32)
    expected[0:2] = x[0:2] + 1
    expected[4:8] = x[4:8] * 2
    np.testing.assert_array_equal(y, expected)
    for first in (0.0, 500.0):
        x = np.arange(12, dtype=np.float32).reshape(4, 3)
        x[0, 0] = first
        y = np.full((4, 3), 7, np.float32)
        compile_for(_data_dependent(), target)(x, y)
        if first > 100:
            np.testing.assert_array_equal(y, x * 2)
        else:
            expected = np.full((4, 3), 7, np.float32)
            expected[:2] = x[:2] + 1
            np.testing.assert_array_equal(y, expected)
