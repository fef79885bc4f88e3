"""A float division by (or product with) a zero the compiler can see has its IEEE result (+-inf, NaN for
0 / 0), as C, CUDA and TileLang give it at run time (`tl_ir.float_division`): TVM's
constant folder stopped the build with "Divide by zero" once a tile filled with 0.0
was forwarded into ``A[i] / z[i]``, and the kernel parser refused a literal
``x / T.float32(0)`` with a message about integer division."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit.language as T
from integration_tests.interpreter_target import compile_for

TARGETS = ["c", "llvm", "interpreter"]
DIVIDENDS = np.array([1.0, -1.0, 0.0, 2.0, np.inf, np.nan], np.float32)


def _by_filled_tile(zero: float, dtype: str) -> Any:
    @T.prim_func
    def by_filled_tile(A: T.Tensor((6,), dtype), B: T.Tensor((6,), dtype)):
        with T.Kernel(1, threads=6):
            z = T.alloc_fragment((6,), dtype)
            T.fill(z, zero)
            for i in T.Parallel(6):
                B[i] = A[i] / z[i]

    return by_filled_tile


def _expected(zero: float) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return DIVIDENDS / np.float32(zero)


def _assert_same(actual: Any, expected: Any) -> None:
    actual = np.asarray(actual, np.float64)
    expected = np.asarray(expected, np.float64)
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    finite = ~np.isnan(expected)
    np.testing.assert_array_equal(actual[finite], expected[finite])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("zero", [0.0, -0.0])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_division_by_a_tile_filled_with_zero(target: str, zero: float, dtype: str) -> None:
    kernel = compile_for(_by_filled_tile(zero, dtype), target, out_idx=[1])
    _assert_same(kernel(DIVIDENDS.astype(dtype)), _expected(zero))


def _by_literal_zero() -> Any:
    @T.prim_func
    def by_literal_zero(
        A: T.Tensor((6,), "float32"),
        B: T.Tensor((6,), "float32"),
        C: T.Tensor((6,), "float32"),
        D: T.Tensor((6,), "float32"),
    ):
        with T.Kernel(1):
            for i in T.serial(6):
                B[i] = A[i] / T.float32(0)
                C[i] = A[i] / -0.0
                D[i] = 1.0 / T.float32(0) + A[i]

    return by_literal_zero


@pytest.mark.parametrize("target", TARGETS)
def test_division_by_a_literal_float_zero(target: str) -> None:
    kernel = compile_for(_by_literal_zero(), target, out_idx=[1, 2, 3])
    b, c, d = kernel(DIVIDENDS)
    _assert_same(b, _expected(0.0))
    _assert_same(c, _expected(-0.0))
    _assert_same(d, np.float32(np.inf) + DIVIDENDS)


def test_a_forwarded_zero_divisor_prints() -> None:
    """The forwarded divisor is written as the product right away, so the IR between
    passes prints (TVM's printer folded the division and stopped too)."""
    from tl_codegen_cpu.passes.forward_copies import forward_copies

    body = forward_copies(_by_filled_tile(0.0, "float32").body)
    assert 'T.float32("inf")' in body.script()


def _times_filled_tile(zero: float, dtype: str) -> Any:
    @T.prim_func
    def times_filled_tile(A: T.Tensor((6,), dtype), B: T.Tensor((6,), dtype)):
        with T.Kernel(1, threads=6):
            z = T.alloc_fragment((6,), dtype)
            T.fill(z, zero)
            for i in T.Parallel(6):
                B[i] = A[i] * z[i]

    return times_filled_tile


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("zero", [0.0, -0.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_product_with_a_tile_filled_with_zero_keeps_its_ieee_value(
    target: str, zero: float, dtype: str
) -> None:
    # Forwarding the fill made it x * 0.0, which TVM folded to 0: NaN for an infinite
    # or NaN x (and the signs' product) is what C, TileLang (the tile stays in memory)
    # and the interpreter give.
    kernel = compile_for(_times_filled_tile(zero, dtype), target, out_idx=[1])
    got = np.asarray(kernel(DIVIDENDS.astype(dtype)), np.float64)
    with np.errstate(invalid="ignore"):
        expected = DIVIDENDS.astype(np.float64) * zero
    _assert_same(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def _negated_zeros(dtype: str) -> Any:
    @T.prim_func
    def negated_zeros(A: T.Tensor((4,), dtype), B: T.Tensor((4, 4), dtype)):
        with T.Kernel(1, threads=4):
            z = T.alloc_fragment((4,), dtype)
            T.fill(z, 0.0)
            for i in T.Parallel(4):
                B[0, i] = -z[i]
                B[1, i] = -T.cast(T.bfloat16(0.0), dtype)
                B[2, i] = -T.trunc(T.cast(0.0, dtype))
                B[3, i] = A[i] / -T.cast(0, dtype)

    return negated_zeros


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_negated_constant_zero_is_negative_zero(target: str, dtype: str) -> None:
    # TVM writes -x as x * -1.0 and folded 0.0 * -1.0 to +0.0 (1 / -0.0 came back +inf).
    kernel = compile_for(_negated_zeros(dtype), target, out_idx=[1])
    got = np.asarray(kernel(np.ones(4, dtype)), np.float64)
    np.testing.assert_array_equal(got[:3], np.zeros((3, 4)))
    np.testing.assert_array_equal(np.signbit(got[:3]), np.ones((3, 4), bool))
    np.testing.assert_array_equal(got[3], np.full(4, -np.inf))
