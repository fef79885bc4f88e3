"""An integer division on the CPU targets never kills the process.

x86's divide traps (SIGFPE) on a zero divisor and on the most negative value divided
by -1: ``A[i] // B[i]`` with one bad element ended the Python process on both
targets (int8/int16 only on ``llvm``). `cpu-integer-division-without-traps` gives
them results: divisor 0 -> quotient 0, remainder the dividend; divisor -1 ->
quotient ``-a`` (the most negative value wraps to itself), remainder 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T

N = 8


def _divisions(dtype: str) -> Any:
    @T.prim_func
    def divisions(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), Out: T.Tensor((4, N), dtype)):
        with T.Kernel(1, threads=1):
            for i in T.serial(N):
                Out[0, i] = A[i] // B[i]
                Out[1, i] = A[i] % B[i]
                Out[2, i] = T.truncdiv(A[i], B[i])
                Out[3, i] = T.truncmod(A[i], B[i])

    return divisions


def _expected(a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    rows = []
    for floor in (True, False):
        quotient, remainder = [], []
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            if y == 0:
                q, r = 0, x
            elif y == -1:
                q, r = -x, 0
            elif floor:
                q, r = x // y, x % y
            else:
                q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
                r = x - q * y
            quotient.append(q)
            remainder.append(r)
        rows += [quotient, remainder]
    info = np.iinfo(dtype)
    wrapped = (np.array(rows, dtype=object) - info.min) % (1 << info.bits) + info.min
    return wrapped.astype(dtype)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32"])
@pytest.mark.parametrize("target", ["c", "llvm"])
def test_division_by_zero_and_minus_one_gives_values(target: str, dtype: str) -> None:
    info = np.iinfo(dtype)
    signed = info.min < 0
    a = np.array([info.min, 7, -7 if signed else 9, info.max, 5, info.min, 0, 13], dtype)
    b = np.array([-1 if signed else 1, 0, 2, 0, 3, 3, 0, -4 if signed else 4], dtype)
    kernel = tl_jit.compile(_divisions(dtype), out_idx=[2], target=target)
    np.testing.assert_array_equal(kernel(a, b), _expected(a, b, dtype))


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
def test_a_divisor_provably_zero_builds_and_gives_the_defined_result(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``x % (T.uint8(0) // y % i)``: the divisor is 0 whatever the data (the front end
    does not fold it), and TVM's bound analysis stopped the build with an internal
    error ("Find divide by zero") once a simplification exposed it (random integer
    expressions). The division takes its defined result (quotient 0, remainder the
    dividend) with no division left."""
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")

    @T.prim_func
    def zero_divisor(A: T.Tensor((2, 16), "uint8"), Out: T.Tensor((2, 16), "uint8")):
        with T.Kernel(1, threads=1):
            for i in T.serial(16):
                Out[0, i] = A[1, i] % ((T.uint8(0) // A[0, i]) % T.cast(i, "uint8"))
                Out[1, i] = A[1, i] // ((T.uint8(0) // A[0, i]) % T.cast(i, "uint8"))

    kernel = tl_jit.compile(zero_divisor, target="c" if target == "interpreter" else target)
    a = (np.arange(32, dtype=np.uint8) + 1).reshape(2, 16)
    out = np.full((2, 16), 99, np.uint8)
    kernel(a, out)
    np.testing.assert_array_equal(out, [a[1], np.zeros(16, np.uint8)])
