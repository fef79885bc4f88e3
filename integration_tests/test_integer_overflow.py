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


def _chains() -> Any:
    @T.prim_func
    def chains(
        A: T.Tensor((6,), "int32"),
        B: T.Tensor((6,), "int32"),
        C: T.Tensor((6,), "int32"),
        Out: T.Tensor((4, 6), "int32"),
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(6):
                # Each step overflows int32; the whole chain stays inside int64.
                Out[0, i] = A[i] * 65537 + B[i] * 3 - C[i] + A[i] + B[i] - 7
                # A product of products leaves int64: wrapped again on the way.
                Out[1, i] = A[i] * B[i] * C[i] * A[i] + B[i]
                # A wrapped sum read by a comparison and a division must be the wrapped value.
                Out[2, i] = T.if_then_else(A[i] + B[i] + C[i] < 0, 1, 0)
                Out[3, i] = (A[i] * B[i] + C[i]) // 3

    return chains


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
def test_chained_arithmetic_wraps_like_each_step(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chain of ``+ - *`` wraps once at its end when its 64-bit computation cannot
    overflow (same low 32 bits as wrapping every step), and step by step where it could."""
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
    kernel = tl_jit.compile(_chains(), target="c" if target == "interpreter" else target)
    big, small = 2**31 - 1, -(2**31)
    a = np.array([big, small, 123456789, -5, 65535, 1], np.int32)
    b = np.array([big, -1, 987654321, big, 65537, small], np.int32)
    c = np.array([small, big, -192837465, 3, -65536, big], np.int32)
    out = np.zeros((4, 6), np.int32)
    kernel(a, b, c, out)
    with np.errstate(over="ignore"):
        want = [
            a * np.int32(65537) + b * np.int32(3) - c + a + b - np.int32(7),
            a * b * c * a + b,
            (a + b + c < 0).astype(np.int32),
            np.floor_divide(a * b + c, np.int32(3)),
        ]
    np.testing.assert_array_equal(out, np.array(want))


def test_a_chain_wraps_once() -> None:
    """Wrapping every step of ``q0 + bx * 64 + i`` named each operand twice per level
    (the mask and the sign bit), doubling the expression per level: with a run-time
    grid extent in every use of the block index, a varlen attention's guards grew to
    kilobytes and took most of a minute to build. The chain now wraps once at its end."""
    from tl_backend_api import create_backend_context
    from tl_backend_api.artifact import kernel_module

    @T.prim_func
    def offsets(Start: T.Tensor((4,), "int32"), M: T.int32, Out: T.Tensor((4, 256), "int32")):
        with T.Kernel(T.ceildiv(M, 64), 4, threads=64) as (bx, by):
            q0 = Start[by]
            for i in T.Parallel(64):
                Out[by, T.min(bx * 64 + i, 255)] = q0 + bx * 64 + i + by * 1000 - 3

    lowered = create_backend_context("c").lower(kernel_module(offsets, "offsets")).script()
    # One wrap (its mask named twice) for the whole chain.
    assert lowered.count("4294967295") == 2, lowered
    kernel = tl_jit.compile(offsets, target="c")
    start = np.array([2**31 - 100, 5, -(2**31), 0], np.int32)
    out = np.zeros((4, 256), np.int32)
    kernel(start, 256, out)
    rows, cols = np.meshgrid(np.arange(4), np.arange(256), indexing="ij")
    with np.errstate(over="ignore"):
        want = start[:, None] + (cols + rows * 1000 - 3).astype(np.int32)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_a_64_bit_chain_wraps_like_each_step(target: str) -> None:
    # On c an int64 chain continues in uint64 whatever its bounds (C's unsigned
    # arithmetic wraps): the same low 64 bits as wrapping every step.
    @T.prim_func
    def chain64(
        A: T.Tensor((6,), "int64"), B: T.Tensor((6,), "int64"), Out: T.Tensor((3, 6), "int64")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(6):
                Out[0, i] = A[i] * B[i] + A[i] * 3 - B[i] + 7
                Out[1, i] = T.if_then_else(A[i] + B[i] * B[i] < A[i], 1, 0)
                Out[2, i] = (A[i] * B[i] - A[i]) // 5

    a = np.array([2**63 - 1, -(2**63), 123456789123, -5, 3, 2**40], np.int64)
    b = np.array([2**63 - 1, -1, 987654321987, 2**62, -7, 2**30], np.int64)
    out = np.zeros((3, 6), np.int64)
    tl_jit.compile(chain64, target=target)(a, b, out)
    with np.errstate(over="ignore"):
        want = [
            a * b + a * 3 - b + 7,
            (a + b * b < a).astype(np.int64),
            np.floor_divide(a * b - a, 5),
        ]
    np.testing.assert_array_equal(out, np.array(want))
