"""``T.unroll`` is a hint: a run-time trip count gives a serial loop (TVM failed with
"Cannot unroll non-constant loop", an internal error naming no line), and TileLang's
``unroll_factor=`` / ``explicit=`` keywords are accepted and checked."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from tl_ir.errors import KernelTypeError


def _run_time_unroll() -> Any:
    @T.prim_func
    def run_time_unroll(N: T.int32, A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.unroll(N):
                A[i] = i
            for j in T.unroll(16, 32, 4, unroll_factor=2):
                A[j] = -1.0

    return run_time_unroll


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_unroll_of_a_run_time_count_runs_serially(target: str) -> None:
    kernel = tl_jit.compile(_run_time_unroll(), target=target)
    a = np.zeros(32, np.float32)
    kernel(5, a)
    want = np.zeros(32, np.float32)
    want[:5] = np.arange(5)
    want[16::4] = -1.0
    np.testing.assert_array_equal(a, want)


def test_unroll_factor_must_be_a_positive_int() -> None:
    with pytest.raises(KernelTypeError, match="unroll_factor"):

        @T.prim_func
        def bad(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                for i in T.unroll(8, unroll_factor=0):
                    A[i] = 1.0
