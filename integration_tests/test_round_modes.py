"""``T.round(x, rounding_mode)`` takes TileLang's rounding modes: ties to even (the
default) and ties away from zero (C's ``round``). The mode argument used to reach
TVM's ``round``, which failed with an FFI type error naming no parameter."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from tl_ir.errors import KernelTypeError


def _rounds(dtype: str) -> Any:
    @T.prim_func
    def rounds(A: T.Tensor((10,), dtype), B: T.Tensor((10,), dtype), C: T.Tensor((10,), dtype)):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(10):
                B[i] = T.round(A[i], "ties-away-from-zero")
                C[i] = T.round(A[i])

    return rounds


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_round_modes(target: str, dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    values = [2.5, -2.5, 0.5, -0.5, 1.5, 0.49999997, -0.0, 3.0, np.inf, np.nan]
    a = np.array(values).astype(np_dtype)
    b, c = np.zeros(10, np_dtype), np.zeros(10, np_dtype)
    tl_jit.compile(_rounds(dtype), target="c" if target == "interpreter" else target)(a, b, c)
    exact = a.astype(np.float64)
    whole = np.trunc(exact)
    with np.errstate(invalid="ignore"):
        away = np.where(np.abs(exact - whole) >= 0.5, whole + np.sign(exact), whole)
    np.testing.assert_array_equal(b, away.astype(np_dtype))
    np.testing.assert_array_equal(c, np.round(exact).astype(np_dtype))


def test_unknown_rounding_mode_is_refused() -> None:
    with pytest.raises(KernelTypeError, match=r"rounding_mode to be one of .*got 'up'"):

        @T.prim_func
        def wrong(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                A[0] = T.round(A[1], "up")


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
def test_rounding_a_16_bit_constant_at_its_maximum_away_from_zero(target: str) -> None:
    # The unchosen branch trunc(x) + 1 was folded in float16: "Literal value 65505
    # exceeds maximum of float16" stopped the build.
    import tl_jit.language as T
    from integration_tests.interpreter_target import compile_for

    @T.prim_func
    def at_max(X: T.Tensor((4,), "float16"), Out: T.Tensor((4,), "float16")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                Out[i] = T.max(X[i], T.round(T.float16(65504.0), "ties-away-from-zero"))
                X[i] = T.round(X[i], "ties-away-from-zero")

    x = np.array([2.5, -2.5, 0.49, 65504.0], np.float16)
    out = np.zeros(4, np.float16)
    compile_for(at_max, target)(x, out)
    np.testing.assert_array_equal(out, np.full(4, 65504.0, np.float16))
    np.testing.assert_array_equal(x, np.array([3.0, -3.0, 0.0, 65504.0], np.float16))
