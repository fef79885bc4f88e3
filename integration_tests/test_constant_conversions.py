"""Constants the compiled targets refused with raw TVM or gcc errors, on c, llvm and the
reference interpreter (`tl_ir.interpret.run`), which must agree:

* bfloat16 constants stored (``Out[j] = T.bfloat16(3.0)``, ``T.fill``/``T.clear`` of a
  local, fragment or shared tile then ``T.copy``), in serial and vector loops: gcc
  refused ``&(3.0f)``, llvm "dtype mismatch on BufferStore" (`bfloat16_constants`);
  float16 alongside, which always built;
* ``T.cast`` of a constant out of the target type's range (`tl_ir.constant_casts`):
  integers wrap, a float saturates to an integer type, beyond float16 is inf;
* ``a // MIN`` and ``a % MIN`` for a signed type's most negative constant
  (`cpu-minimum-divisors`; llvm negated the divisor);
* a constant divisor of 0 is refused at its line with a `KernelTypeError`, as
  TileLang (TVM's constant folding) refuses it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_jit
from tl_ir.errors import KernelTypeError
from tl_ir.interpret import run

ml_dtypes = pytest.importorskip("ml_dtypes")

RUNNERS = ("interpret", "c", "llvm")
HALF = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


def _run(kernel: Any, runner: str, *arrays: np.ndarray[Any, Any]) -> None:
    if runner == "interpret":
        run(kernel, list(arrays))
    else:
        tl_jit.compile(kernel, target=runner)(*arrays)


# --- bfloat16 / float16 constants stored ------------------------------------------------


def _store(dtype: str, loop: str) -> Any:
    @T.prim_func
    def store(Out: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=32):
            if loop == "parallel":
                for j in T.Parallel(64):
                    Out[j] = T.cast(3.0, dtype)
            elif loop == "vectorized":
                for j in T.vectorized(64):
                    Out[j] = T.cast(3.0, dtype)
            else:
                for j in T.serial(64):
                    Out[j] = T.cast(3.0, dtype)

    return store


def _typed_constant(dtype: str) -> Any:
    @T.prim_func
    def typed(Out: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=32):
            for j in T.Parallel(64):
                Out[j] = T.bfloat16(3.0) if dtype == "bfloat16" else T.float16(3.0)

    return typed


def _tile_fill(dtype: str, scope: str, clear: bool) -> Any:
    @T.prim_func
    def fill(Out: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=32):
            if scope == "shared":
                t = T.alloc_shared((64,), dtype)
            elif scope == "local":
                t = T.alloc_local((64,), dtype)
            else:
                t = T.alloc_fragment((64,), dtype)
            if clear:
                T.clear(t)
            else:
                T.fill(t, 3.0)
            T.copy(t, Out)

    return fill


def _fill_then_compute(dtype: str) -> Any:
    @T.prim_func
    def compute(Out: T.Tensor((64,), dtype), B: T.Tensor((4,), dtype)):
        with T.Kernel(1, threads=32):
            t = T.alloc_fragment((64,), dtype)
            T.fill(t, 3.0)
            for j in T.Parallel(64):
                Out[j] = t[j] + Out[j] * T.cast(0.5, dtype) + B[1]

    return compute


def _uniform_load(dtype: str) -> Any:
    @T.prim_func
    def uniform(Out: T.Tensor((64,), dtype), B: T.Tensor((4,), dtype)):
        with T.Kernel(1, threads=32):
            for j in T.Parallel(64):
                Out[j] = B[1] + B[2]

    return uniform


def _check_half(kernel: Any, dtype: str, runner: str, expected: float, with_b: bool) -> None:
    out = np.full(64, 2.0, np.float32).astype(HALF[dtype])
    arrays = [out]
    if with_b:
        arrays.append(np.array([1.5, 2.5, 3.5, 4.5], np.float32).astype(HALF[dtype]))
    _run(kernel, runner, *arrays)
    np.testing.assert_array_equal(out.astype(np.float32), np.full(64, expected, np.float32))


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", sorted(HALF))
@pytest.mark.parametrize("loop", ["parallel", "vectorized", "serial"])
def test_a_stored_half_constant_is_stored(runner: str, dtype: str, loop: str) -> None:
    _check_half(_store(dtype, loop), dtype, runner, 3.0, with_b=False)


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", sorted(HALF))
def test_a_typed_half_constant_is_stored(runner: str, dtype: str) -> None:
    _check_half(_typed_constant(dtype), dtype, runner, 3.0, with_b=False)


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", sorted(HALF))
@pytest.mark.parametrize("scope", ["local", "fragment", "shared"])
@pytest.mark.parametrize("clear", [False, True], ids=["fill", "clear"])
def test_a_filled_half_tile_copies_its_constant(
    runner: str, dtype: str, scope: str, clear: bool
) -> None:
    expected = 0.0 if clear else 3.0
    _check_half(_tile_fill(dtype, scope, clear), dtype, runner, expected, with_b=False)


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", sorted(HALF))
def test_half_constants_in_arithmetic_keep_their_values(runner: str, dtype: str) -> None:
    # 3 + 2 * 0.5 + 2.5: a constant's code must not be read as a number.
    _check_half(_fill_then_compute(dtype), dtype, runner, 6.5, with_b=True)


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", sorted(HALF))
def test_a_lane_uniform_half_value_is_stored_to_every_lane(runner: str, dtype: str) -> None:
    _check_half(_uniform_load(dtype), dtype, runner, 6.0, with_b=True)


def test_a_bfloat16_constant_rounds_to_nearest_even() -> None:
    # 1 + 2**-8 is a tie between 1 and 1 + 2**-7: to even, 1.
    @T.prim_func
    def rounded(Out: T.Tensor((8,), "bfloat16")):
        with T.Kernel(1, threads=1):
            for j in T.vectorized(8):
                Out[j] = T.cast(1.00390625, "bfloat16")

    for runner in RUNNERS:
        out = np.zeros(8, ml_dtypes.bfloat16)
        _run(rounded, runner, out)
        assert out.astype(np.float32).tolist() == [1.0] * 8, runner


# --- T.cast of constants out of range -----------------------------------------------------


def _cast_plus(expression: str, dtype: str) -> Any:
    constant = {
        "int8_200": lambda: T.cast(200, "int8"),
        "uint16_-1": lambda: T.cast(-1, "uint16"),
        "float16_1e6": lambda: T.cast(1e6, "float16"),
        "int32_3e9": lambda: T.cast(3e9, "int32"),
        "uint8_-2.5": lambda: T.cast(-2.5, "uint8"),
        "int8_nan": lambda: T.cast(float("nan"), "int8"),
        "uint32_-1": lambda: T.cast(-1, "uint32"),
    }[expression]

    @T.prim_func
    def cast_plus(A: T.Tensor((4,), dtype), Out: T.Tensor((4,), dtype)):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                Out[i] = constant() + A[i]

    return cast_plus


CAST_CASES = [
    ("int8_200", "int8", [-56, -55, -54, -53]),
    ("uint16_-1", "uint16", [65535, 0, 1, 2]),
    ("float16_1e6", "float16", [np.inf] * 4),
    ("int32_3e9", "int32", [2147483647, -2147483648, -2147483647, -2147483646]),
    ("uint8_-2.5", "uint8", [0, 1, 2, 3]),
    ("int8_nan", "int8", [0, 1, 2, 3]),
    ("uint32_-1", "uint32", [4294967295, 0, 1, 2]),
]


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize(("expression", "dtype", "expected"), CAST_CASES)
def test_a_cast_constant_converts_as_a_run_time_value(
    runner: str, expression: str, dtype: str, expected: list[float]
) -> None:
    a = np.array([0, 1, 2, 3]).astype(dtype)
    out = np.zeros(4, dtype)
    with np.errstate(over="ignore"):
        _run(_cast_plus(expression, dtype), runner, a, out)
    np.testing.assert_array_equal(out, np.array(expected).astype(dtype))


# --- floor division by a type's most negative constant ----------------------------------


def _minimum_divisor(dtype: str, remainder: bool, loop: str) -> Any:
    minimum = -(1 << (int(dtype[3:]) - 1))

    @T.prim_func
    def divide(A: T.Tensor((8,), dtype), Out: T.Tensor((8,), dtype)):
        with T.Kernel(1, threads=1):
            if loop == "vectorized":
                for i in T.vectorized(8):
                    Out[i] = (
                        A[i] % T.cast(minimum, dtype)
                        if remainder
                        else A[i] // T.cast(minimum, dtype)
                    )
            else:
                for i in T.serial(8):
                    Out[i] = (
                        A[i] % T.cast(minimum, dtype)
                        if remainder
                        else A[i] // T.cast(minimum, dtype)
                    )

    return divide


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("remainder", [False, True], ids=["floordiv", "floormod"])
@pytest.mark.parametrize("loop", ["serial", "vectorized"])
def test_floor_division_by_the_most_negative_constant(
    runner: str, dtype: str, remainder: bool, loop: str
) -> None:
    info = np.iinfo(dtype)
    values = [5, -5, int(info.min), int(info.max), 0, 1, -1, int(info.min) + 1]
    a = np.array(values, dtype)
    out = np.zeros(8, dtype)
    _run(_minimum_divisor(dtype, remainder, loop), runner, a, out)
    # Python's // and % are floor division, exact on these integers.
    exact = [v % int(info.min) if remainder else v // int(info.min) for v in values]
    np.testing.assert_array_equal(out, np.array(exact, dtype))


# --- a constant divisor of 0 --------------------------------------------------------------


def test_a_constant_zero_divisor_is_refused_at_its_line() -> None:
    with pytest.raises(KernelTypeError, match=r"divisor .* is the constant 0") as info:

        @T.prim_func
        def divide(A: T.Tensor((4,), "int32"), Out: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=1):
                for i in T.serial(4):
                    Out[i] = A[i] // T.int32(0)

    assert "Out[i] = A[i] // T.int32(0)" in str(info.value)


def test_a_negative_difference_of_unsigned_constants_is_refused_at_its_line() -> None:
    # TVM folds it and stops with "Check failed ... Minuend 's value is 0U": named now.
    with pytest.raises(KernelTypeError, match=r"difference of two unsigned constants") as info:

        @T.prim_func
        def subtract(A: T.Tensor((4,), "uint8"), Out: T.Tensor((4,), "uint8")):
            with T.Kernel(1, threads=1):
                for i in T.serial(4):
                    Out[i] = A[i] + (T.uint8(0) - T.uint8(255))

    assert "T.uint8(0) - T.uint8(255)" in str(info.value)
    assert "Check failed" not in str(info.value)


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_an_unsigned_mask_literal_past_int32_takes_the_operands_type(target: str) -> None:
    # TileLang's test_tilelang_intimm: a & 0xFFFFFFFF on uint32 was refused ("the
    # constant -1 is negative"): TVM made the literal int32 -1 first.
    @T.prim_func
    def masks(A: T.Tensor((4,), "uint32"), B: T.Tensor((3, 4), "uint32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                B[0, i] = A[i] & 0xFFFFFFFF
                B[1, i] = A[i] ^ 0x80000000
                B[2, i] = 0x80000001 | A[i]

    a = np.array([1, 2, 0xFFFFFFFF, 0x80000000], np.uint32)
    b = np.zeros((3, 4), np.uint32)
    tl_jit.compile(masks, target=target)(a, b)
    np.testing.assert_array_equal(b, [a, a ^ np.uint32(0x80000000), a | np.uint32(0x80000001)])
