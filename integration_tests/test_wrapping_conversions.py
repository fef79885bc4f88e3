"""Integer conversions and narrow arithmetic that wrap keep their wrapped values on
every target (`wrapping-casts`, `cpu-wrap-integer-overflow`).

TVM bounds a conversion by the value's range intersected with the target type's, so it
took a wrapping conversion for its value: ``T.cast(u32, "int32") < 0`` was false on c
and llvm, ``T.max(T.cast(u, "int32"), 0)`` kept the negative value, ``%``/``//`` by
a conversion or of a wrapped product were computed as truncating division, and on llvm
a remainder by such a conversion lost its zero-divisor guard (SIGFPE). ``~a`` of a
uint8 was ``-a - 1`` on c (C promotes to int). The expected values are numpy's (two's
complement), as the reference interpreter computes them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T

TARGETS = ["c", "llvm", "interpreter"]


def _run(func: Any, target: str, monkeypatch: pytest.MonkeyPatch, *arrays: np.ndarray) -> None:
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
    tl_jit.compile(func, target="c" if target == "interpreter" else target)(*arrays)


def _signs(unsigned: str, signed: str) -> Any:
    @T.prim_func
    def signs(A: T.Tensor((8,), unsigned), B: T.Tensor((8,), "int32"), C: T.Tensor((8,), signed)):
        with T.Kernel(1, threads=8) as _bx:
            for i in T.Parallel(8):
                B[i] = T.if_then_else(T.cast(A[i], signed) < T.cast(0, signed), 1, 0)
                C[i] = T.max(T.cast(A[i], signed), T.cast(0, signed))

    return signs


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("target", TARGETS)
def test_unsigned_to_signed_conversion_may_be_negative(
    target: str, bits: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    unsigned, signed = f"uint{bits}", f"int{bits}"
    a = np.array([0, 1, 2**bits - 1, 2 ** (bits - 1), 5, 7, 0, 3], dtype=unsigned)
    negative, clamped = np.zeros(8, np.int32), np.zeros(8, signed)
    _run(_signs(unsigned, signed), target, monkeypatch, a, negative, clamped)
    as_signed = a.view(signed)
    np.testing.assert_array_equal(negative, (as_signed < 0).astype(np.int32))
    np.testing.assert_array_equal(clamped, np.maximum(as_signed, 0))


def _divisions() -> Any:
    @T.prim_func
    def divisions(
        A: T.Tensor((8,), "int32"),
        B: T.Tensor((8,), "uint32"),
        U: T.Tensor((8,), "uint16"),
        V: T.Tensor((8,), "uint16"),
        Out: T.Tensor((5, 8), "int32"),
    ):
        with T.Kernel(1, threads=8) as _bx:
            for i in T.Parallel(8):
                Out[0, i] = A[i] // T.cast(B[i], "int32")
                Out[1, i] = A[i] % T.cast(B[i], "int32")
                Out[2, i] = (T.cast(U[i], "int32") * T.cast(V[i], "int32")) % 7
                Out[3, i] = T.cast(
                    (T.cast(U[i], "int16") * T.cast(V[i], "int16")) % T.int16(7), "int32"
                )
                Out[4, i] = T.truncmod(T.int32(-32768), T.cast(B[i], "int32"))

    return divisions


@pytest.mark.parametrize("target", TARGETS)
def test_divisions_by_and_of_wrapped_values_floor(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = np.array([7, -7, 100, -100, 9, -9, 5, 0], np.int32)
    b = np.array([2**32 - 3, 2**32 - 1, 3, 2**31, 4, 2**32 - 5, 0, 1], np.uint32)
    u = np.array([65535, 50000, 40000, 5, 255, 200, 134, 0], np.uint16)
    v = np.array([65535, 60000, 60000, 3, 134, 255, 200, 9], np.uint16)
    out = np.zeros((5, 8), np.int32)
    _run(_divisions(), target, monkeypatch, a, b, u, v, out)
    d = b.view(np.int32).astype(np.int64)
    safe = np.where(d == 0, 1, d)
    want_div = np.where(d == 0, 0, a // safe)
    want_mod = np.where(d == 0, a, a % safe)
    with np.errstate(over="ignore"):
        product32 = u.astype(np.int32) * v.astype(np.int32)
        product16 = u.astype(np.int16) * v.astype(np.int16)
    remainder = np.where(d == 0, -32768, np.fmod(-32768, safe))
    np.testing.assert_array_equal(out[0], want_div)
    np.testing.assert_array_equal(out[1], want_mod)
    np.testing.assert_array_equal(out[2], product32 % 7)
    np.testing.assert_array_equal(out[3], (product16 % np.int16(7)).astype(np.int32))
    np.testing.assert_array_equal(out[4], remainder)


def _complements() -> Any:
    @T.prim_func
    def complements(
        A: T.Tensor((8,), "uint8"), H: T.Tensor((8,), "uint16"), Out: T.Tensor((4, 8), "int32")
    ):
        with T.Kernel(1, threads=1) as _bx:
            for i in T.serial(8):
                Out[0, i] = T.cast((~A[i]) // T.max(A[i], T.uint8(1)), "int32")
                Out[1, i] = T.if_then_else((~A[i]) < A[i], 1, 0)
                Out[2, i] = T.cast(~A[i], "int32")
                Out[3, i] = T.cast((~H[i]) >> T.uint16(8), "int32")

    return complements


@pytest.mark.parametrize("target", TARGETS)
def test_narrow_complement_wraps(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    a = np.array([159, 1, 2, 3, 100, 200, 255, 0], np.uint8)
    h = np.array([1, 2, 300, 40000, 65535, 0, 7, 9], np.uint16)
    out = np.zeros((4, 8), np.int32)
    _run(_complements(), target, monkeypatch, a, h, out)
    na = ~a
    np.testing.assert_array_equal(out[0], na // np.maximum(a, 1))
    np.testing.assert_array_equal(out[1], (na < a).astype(np.int32))
    np.testing.assert_array_equal(out[2], na.astype(np.int32))
    np.testing.assert_array_equal(out[3], ((~h) >> 8).astype(np.int32))


def _minimum_comparisons() -> Any:
    @T.prim_func
    def minimum_comparisons(A: T.Tensor((8,), "int32"), Out: T.Tensor((4, 8), "int32")):
        with T.Kernel(1, threads=8) as _bx:
            for i in T.Parallel(8):
                Out[0, i] = T.if_then_else(A[i] == T.int32(-2147483648), 1, 0)
                Out[1, i] = T.if_then_else(A[i] <= T.int32(-2147483648), 1, 0)
                Out[2, i] = T.if_then_else(T.int32(-2147483648) == A[i], 1, 0)
                Out[3, i] = T.if_then_else(T.int32(-2147483648) >= A[i], 1, 0)

    return minimum_comparisons


@pytest.mark.parametrize("target", TARGETS)
def test_comparisons_with_the_int32_minimum(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # TVM's simplifier folded x == INT32_MIN and x <= INT32_MIN to false.
    a = np.array([-(2**31), 0, 5, -(2**31) + 1, 2**31 - 1, -(2**31), -1, 7], np.int32)
    out = np.zeros((4, 8), np.int32)
    _run(_minimum_comparisons(), target, monkeypatch, a, out)
    is_minimum = (a == np.iinfo(np.int32).min).astype(np.int32)
    np.testing.assert_array_equal(out, np.stack([is_minimum] * 4))
