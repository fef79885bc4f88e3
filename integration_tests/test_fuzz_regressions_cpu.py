"""Regressions found by the differential fuzz of the CPU targets (``c`` against ``llvm``
against the reference interpreter).

* Nested bfloat16 arithmetic (``y = y * a + a`` three times) built for about 100 s on
  ``llvm``: the rounding of each step read the step below it four times, so the code
  grew fourfold per level (`cpu-round-bfloat16` bound the nested roundings on ``c``
  only). A chain through ``local`` scalars (``y = a * a + a``) did not build at all on
  either target (the binding read the scalars TVM's legalization renames).
* ``T.uint64(0) - x`` was 0 on ``llvm``, ``x + UINT64_MAX`` a constant and ``x + 5 <
  x`` false: TVM's LLVM code marks 64-bit arithmetic no-wrap. ``int64`` overflow checks
  (``s + 5 < s``) were folded to false on both targets. Now both wrap, as the
  interpreter (numpy) and GPUs do (`cpu-wrap-integer-overflow`).
* An integer constant its type cannot hold (``O[i] = 200`` into int8, ``T.int8(200)``,
  ``T.uint8(-1)``) is refused at its line, as TileLang refuses it, naming the value and
  the type; ``T.Cast("int8", 200)`` and ``T.cast(200, "int8")`` wrap everywhere.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from tl_ir.errors import KernelTypeError

TARGETS = ["c", "llvm"]


def _compile(func: Any, target: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
        return tl_jit.compile(func, target="c")
    monkeypatch.delenv("TL_INTERPRET", raising=False)
    return tl_jit.compile(func, target=target)


def _nested_math() -> Any:
    @T.prim_func
    def nested_math(
        A: T.Tensor((32,), "bfloat16"),
        B: T.Tensor((32,), "bfloat16"),
        C: T.Tensor((32,), "bfloat16"),
    ):
        with T.Kernel(1, threads=32) as _bx:
            for i in T.Parallel(32):
                B[i] = T.exp10(T.log1p(T.log2(A[i])))
                C[i] = T.exp(T.log1p(T.log2(A[i])))

    return nested_math


@pytest.mark.parametrize("target", TARGETS)
def test_nested_bfloat16_math_builds_and_agrees(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = np.linspace(1.0, 6.0, 32).astype(ml_dtypes.bfloat16)
    outputs = {}
    for where in (target, "interpreter"):
        b, c = np.zeros(32, ml_dtypes.bfloat16), np.zeros(32, ml_dtypes.bfloat16)
        _compile(_nested_math(), where, monkeypatch)(a, b, c)
        outputs[where] = (b.astype(np.float32), c.astype(np.float32))
    for got, want in zip(outputs[target], outputs["interpreter"], strict=True):
        np.testing.assert_allclose(got, want, rtol=8e-3)  # one bfloat16 step


def _chain_in_place() -> Any:
    @T.prim_func
    def chain_in_place(A: T.Tensor((64,), "bfloat16"), B: T.Tensor((64,), "bfloat16")):
        with T.Kernel(1, threads=64) as _bx:
            for i in T.Parallel(64):
                B[i] = ((A[i] * A[i] + A[i]) * A[i] + A[i]) * A[i] + A[i]

    return chain_in_place


def _chain_through_locals() -> Any:
    @T.prim_func
    def chain_through_locals(A: T.Tensor((64,), "bfloat16"), B: T.Tensor((64,), "bfloat16")):
        with T.Kernel(1, threads=64) as _bx:
            for i in T.Parallel(64):
                a = A[i]
                y = a * a + a
                y = y * a + a
                B[i] = y * a + a

    return chain_through_locals


@pytest.mark.parametrize("chain", [_chain_in_place, _chain_through_locals])
@pytest.mark.parametrize("target", TARGETS)
def test_bfloat16_chain_builds_small_and_rounds_each_step(target: str, chain: Any) -> None:
    kernel = tl_jit.compile(chain(), target=target)
    # Written out in place, the llvm module of the in-place chain was megabytes.
    assert len(kernel.get_kernel_source()) < 200_000
    a = (np.random.default_rng(3).random(64) * 2).astype(ml_dtypes.bfloat16)
    b = np.zeros(64, ml_dtypes.bfloat16)
    kernel(a, b)
    want = a.copy()
    for _ in range(3):
        want = (want * a).astype(ml_dtypes.bfloat16)
        want = (want + a).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(b, want)


def _wide_wraps() -> Any:
    @T.prim_func
    def wide_wraps(
        U: T.Tensor((16,), "uint64"),
        OU: T.Tensor((6, 16), "uint64"),
        S: T.Tensor((16,), "int64"),
        OS: T.Tensor((5, 16), "int64"),
    ):
        with T.Kernel(1, threads=16) as _bx:
            for i in T.Parallel(16):
                OU[0, i] = T.uint64(0) - U[i]
                OU[1, i] = U[i] + T.uint64(18446744073709551615)
                OU[2, i] = T.if_then_else(U[i] + T.uint64(5) < U[i], T.uint64(1), T.uint64(0))
                OU[3, i] = U[i] * U[(i + 1) % 16] + U[i]
                OU[4, i] = U[i] * T.uint64(9223372036854775809)
                OU[5, i] = (U[i] - U[(i + 3) % 16]) % T.uint64(1000)
                OS[0, i] = S[i] + S[i]
                OS[1, i] = T.if_then_else(S[i] + T.int64(5) < S[i], T.int64(1), T.int64(0))
                OS[2, i] = S[i] * S[(i + 1) % 16] - S[i]
                OS[3, i] = S[i] * T.int64(-3)
                OS[4, i] = (S[i] - T.int64(-7)) // T.int64(3)

    return wide_wraps


@pytest.mark.parametrize("target", [*TARGETS, "interpreter"])
def test_64_bit_arithmetic_wraps(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    u = rng.integers(0, 2**64, 16, dtype=np.uint64)
    u[:5] = [0, 1, 2**64 - 1, 2**63, 2**64 - 3]
    s = rng.integers(-(2**63), 2**63, 16, dtype=np.int64)
    s[:5] = [0, -1, 2**63 - 1, -(2**63), 2**62]
    ou, os_ = np.zeros((6, 16), np.uint64), np.zeros((5, 16), np.int64)
    _compile(_wide_wraps(), target, monkeypatch)(u, ou, s, os_)
    with np.errstate(over="ignore"):
        shifted_u, shifted_s = np.roll(u, -1), np.roll(s, -1)
        np.testing.assert_array_equal(ou[0], np.uint64(0) - u)
        np.testing.assert_array_equal(ou[1], u + np.uint64(2**64 - 1))
        np.testing.assert_array_equal(ou[2], (u + np.uint64(5) < u).astype(np.uint64))
        np.testing.assert_array_equal(ou[3], u * shifted_u + u)
        np.testing.assert_array_equal(ou[4], u * np.uint64(2**63 + 1))
        np.testing.assert_array_equal(ou[5], (u - np.roll(u, -3)) % np.uint64(1000))
        np.testing.assert_array_equal(os_[0], s + s)
        np.testing.assert_array_equal(os_[1], (s + np.int64(5) < s).astype(np.int64))
        np.testing.assert_array_equal(os_[2], s * shifted_s - s)
        np.testing.assert_array_equal(os_[3], s * np.int64(-3))
        np.testing.assert_array_equal(os_[4], (s - np.int64(-7)) // np.int64(3))


def _store_int8(value: Any) -> Any:
    @T.prim_func
    def store_int8(Out: T.Tensor((2,), "int8")):
        with T.Kernel(1, threads=1) as _bx:
            Out[0] = value
            Out[1] = T.Cast("int8", 200) + T.cast(-129, "int8")

    return store_int8


def _store_200() -> Any:
    @T.prim_func
    def store_200(Out: T.Tensor((1,), "int8")):
        with T.Kernel(1, threads=1) as _bx:
            Out[0] = 200

    return store_200


def _int8_200() -> Any:
    @T.prim_func
    def int8_200(Out: T.Tensor((1,), "int8")):
        with T.Kernel(1, threads=1) as _bx:
            Out[0] = T.int8(200)

    return int8_200


def _uint8_minus_one() -> Any:
    @T.prim_func
    def uint8_minus_one(Out: T.Tensor((1,), "uint8")):
        with T.Kernel(1, threads=1) as _bx:
            Out[0] = T.uint8(-1)

    return uint8_minus_one


def _int16_40000() -> Any:
    @T.prim_func
    def int16_40000(Out: T.Tensor((1,), "int16")):
        with T.Kernel(1, threads=1) as _bx:
            Out[0] = 40000

    return int16_40000


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (_store_200, r"the constant 200 does not fit int8 \(-128 to 127\).*wrapped value \(-56\)"),
        (_int8_200, r"the constant 200 does not fit int8"),
        (_int16_40000, r"the constant 40000 does not fit int16 .*\(-25536\)"),
        (_uint8_minus_one, r"the constant -1 is negative and does not fit an unsigned"),
    ],
)
def test_an_integer_constant_out_of_its_range_is_refused_at_its_line(
    build: Any, expected: str
) -> None:
    with pytest.raises(KernelTypeError, match=expected) as caught:
        build()
    assert "test_fuzz_regressions_cpu.py" in str(caught.value)
    assert "Check failed" not in str(caught.value)


@pytest.mark.parametrize("target", [*TARGETS, "interpreter"])
def test_a_cast_of_an_out_of_range_constant_wraps(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = np.zeros(2, np.int8)
    _compile(_store_int8(T.Cast("int8", 300)), target, monkeypatch)(out)
    # 300 -> 44; -56 + 127 = 71
    np.testing.assert_array_equal(out, np.array([44, 71], np.int8))


def _store_integer_constants() -> Any:
    @T.prim_func
    def store_integer_constants(U: T.Tensor((2,), "uint64"), S: T.Tensor((2,), "int64")):
        with T.Kernel(1, threads=1) as _bx:
            U[0] = 18446744073709551615  # 2**64 - 1: above int64, which TVM built ints as
            U[1] = 9223372036854775808
            S[0] = -9223372036854775808
            S[1] = 9223372036854775807

    return store_integer_constants


@pytest.mark.parametrize("target", [*TARGETS, "interpreter"])
def test_integer_constants_of_the_whole_64_bit_range_are_stored(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    u, s = np.zeros(2, np.uint64), np.zeros(2, np.int64)
    _compile(_store_integer_constants(), target, monkeypatch)(u, s)
    np.testing.assert_array_equal(u, np.array([2**64 - 1, 2**63], np.uint64))
    np.testing.assert_array_equal(s, np.array([-(2**63), 2**63 - 1], np.int64))


def test_an_integer_constant_beyond_64_bits_is_refused_by_range() -> None:
    with pytest.raises(KernelTypeError, match=r"U\[...\] = the constant 18446744073709551616 "):

        @T.prim_func
        def too_big(U: T.Tensor((1,), "uint64")):
            with T.Kernel(1, threads=1) as _bx:
                U[0] = 18446744073709551616
