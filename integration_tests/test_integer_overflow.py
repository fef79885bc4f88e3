"""32-bit integer arithmetic in stored values wraps on the CPU targets as on GPUs and in
the reference interpreter (``cpu-wrap-integer-overflow``). Before, gcc and LLVM
assumed a signed overflow cannot happen: a sum widened to int64 kept its unwrapped
value, and an overflow check ``a + b < a`` was folded to false."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T


def _overflowing() -> Any:
    @T.prim_func
    def overflowing(
        A: T.Tensor((4,), "int32"),
        B: T.Tensor((4,), "int32"),
        U: T.Tensor((4,), "uint32"),
        Out: T.Tensor((5, 4), "int64"),
        P: T.Tensor((2, 4), "int32"),
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                Out[0, i] = T.cast(A[i] + B[i], "int64")
                Out[1, i] = T.cast(A[i] * B[i], "int64")
                Out[2, i] = T.cast(A[i] - B[i], "int64")
                Out[3, i] = T.cast((A[i] + B[i]) // 2, "int64")
                Out[4, i] = T.cast(U[i] * T.uint32(2654435761), "int64")
                P[0, i] = A[i] + B[i]
                P[1, i] = T.if_then_else(A[i] + B[i] < A[i], 1, 0)

    return overflowing


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
def test_32_bit_overflow_wraps(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
    kernel = tl_jit.compile(_overflowing(), target="c" if target == "interpreter" else target)
    a = np.array([2**31 - 1, -(2**31), 65536, 5], np.int32)
    b = np.array([1, -1, 65536, 7], np.int32)
    u = np.array([1, 2, 3, 4_000_000_000], np.uint32)
    o = np.zeros((5, 4), np.int64)
    p = np.zeros((2, 4), np.int32)
    kernel(a, b, u, o, p)
    with np.errstate(over="ignore"):
        total = a + b
        want = [total, a * b, a - b, total // 2, u * np.uint32(2654435761)]
    np.testing.assert_array_equal(o, np.array([w.astype(np.int64) for w in want]))
    np.testing.assert_array_equal(p, [total, (total < a).astype(np.int32)])
    assert os.environ.get("TL_INTERPRET") == ("1" if target == "interpreter" else None)


def _absmax_rows() -> Any:
    @T.prim_func
    def absmax(A: T.Tensor((4, 16), "int32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=4) as _bx:
            f = T.alloc_fragment((4, 16), "int32")
            o = T.alloc_fragment((4,), "int32")
            T.copy(A, f)
            T.reduce_absmax(f, o, dim=1)
            T.copy(o, B)

    return absmax


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
def test_integer_absmax_starts_from_zero(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # abs(INT_MIN) wraps to INT_MIN (as on GPUs), so a row of INT_MIN reduces to the
    # identity 0 on every target; the interpreter had no identity for integers.
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
    kernel = tl_jit.compile(_absmax_rows(), target="c" if target == "interpreter" else target)
    a = (np.arange(64, dtype=np.int32) - 30).reshape(4, 16)
    a[3, :] = np.iinfo(np.int32).min
    b = np.full(4, 7, np.int32)
    kernel(a, b)
    assert b.tolist() == [30, 14, 17, 0]


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_arithmetic_the_loop_ranges_bound_is_not_widened(target: str) -> None:
    """An im2col's bounds test in a stored value (``by * 16 + v < 24``, its floor
    divisions and remainders) cannot overflow: widened to 64 bits and wrapped back, its
    tile took 130 s to build (TVM's simplifier on 55 kB of IR) and vectorized badly."""
    from tl_backend_api import create_backend_context
    from tl_backend_api.artifact import kernel_module

    @T.prim_func
    def shifted(A: T.Tensor((24, 27), "float32"), B: T.Tensor((32, 32), "float32")):
        with T.Kernel(2, 2, threads=64) as (bx, by):
            for v, w in T.Parallel(16, 16):
                row = by * 16 + v
                col = bx * 16 + w
                B[row, col] = T.if_then_else(
                    row < 24 and col < 27 and (row % 12) // 3 * 2 + col // 9 - 2 >= 0,
                    A[T.min(row, 23), T.min(col, 26)],
                    T.float32(0),
                )

    lowered = create_backend_context(target).lower(kernel_module(shifted, "shifted")).script()
    assert 'T.Cast("int64"' not in lowered
    kernel = tl_jit.compile(shifted, target=target)
    a = np.arange(24 * 27, dtype=np.float32).reshape(24, 27)
    b = np.full((32, 32), np.nan, np.float32)
    kernel(a, b)
    rows, cols = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    inside = (rows < 24) & (cols < 27) & ((rows % 12) // 3 * 2 + cols // 9 - 2 >= 0)
    expected = np.where(inside, a[np.minimum(rows, 23), np.minimum(cols, 26)], 0)
    np.testing.assert_array_equal(b, expected)
