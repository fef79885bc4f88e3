"""bfloat16 and float8 on the CPU targets where TVM's code generators fall short:
scalar parameters of those types (an internal check failure before), and values
rounded to bfloat16 and back (TVM dropped the rounding, returning the value as it
was)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tl_jit
import tl_jit.language as T

TARGETS = ["c", "llvm"]
VALUES = np.array([1.1, 3.0e38, 1.0 / 3.0, -2.7, 0.0, -0.0, 1e-40, np.inf], np.float32)


def _round_trip(dtype: str) -> Any:
    @T.prim_func
    def round_trip(A: T.Tensor((8,), "float32"), C: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(8):
                C[i] = T.cast(T.cast(A[i], dtype), "float32")

    return round_trip


@pytest.mark.parametrize("target", TARGETS)
def test_a_bfloat16_round_trip_rounds(target: str) -> None:
    kernel = tl_jit.compile(_round_trip("bfloat16"), out_idx=[-1], target=target)
    expected = VALUES.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(kernel(VALUES), expected)
    nan = kernel(np.full(8, np.nan, np.float32))
    assert np.isnan(nan).all()


def _scalar(dtype: str) -> Any:
    @T.prim_func
    def broadcast(x: T.dtype(dtype), C: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(4):
                C[i] = T.cast(x, "float32")

    return broadcast


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("adapter", ["cython", "tvm_ffi"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_a_narrow_float_scalar_parameter_holds_its_rounded_value(
    target: str, adapter: str, dtype: str
) -> None:
    kernel = tl_jit.compile(_scalar(dtype), out_idx=[-1], target=target, execution_backend=adapter)
    assert kernel.runtime_kernel.manifest.params[0].dtype == dtype
    for value in (1.1, -2.7, 0.25, 100.0):
        expected = float(np.float32(value).astype(getattr(ml_dtypes, dtype)))
        assert kernel(value).tolist() == [expected] * 4, (dtype, value)
    with pytest.raises(ValueError, match=r"parameter 'x': expected a value representable as"):
        kernel(1e39)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", ["float32", "float16", "int32"])
def test_a_bfloat16_tile_holds_bfloat16_values(target: str, source: str) -> None:
    # TVM kept block-local bfloat16 tiles in float32 storage: a value staged through one
    # (the usual float32 -> bf16 copy before a GEMM) kept every float32 bit, and a
    # float16 or int32 converted to bfloat16 stayed exact (257 -> 257, not 256).
    @T.prim_func
    def staged(A: T.Tensor((8,), source), C: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as _:
            tile = T.alloc_shared((8,), "bfloat16")
            doubled = T.alloc_fragment((8,), "bfloat16")
            T.copy(A, tile)
            for i in T.Parallel(8):
                doubled[i] = tile[i] * T.bfloat16(3)
            for i in T.Parallel(8):
                C[i] = T.cast(doubled[i], "float32")

    kernel = tl_jit.compile(staged, out_idx=[-1], target=target)
    values = {
        "float32": np.array([65504, 0.1, 257, 1.001, 3e38, -7.3, 1e-3, 0], np.float32),
        "float16": np.array([65504, 0.1, 257, 1.001, 127.4, -7.3, 1e-3, 0], np.float16),
        "int32": np.array([257, 1000001, -129, 3, 65535, -7, 1, 0], np.int32),
    }[source]
    tiled = values.astype(np.float32).astype(ml_dtypes.bfloat16)
    expected = (tiled.astype(np.float32) * 3).astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(kernel(values), expected)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_narrow_float_constant_is_the_value_its_type_holds(target: str, dtype: str) -> None:
    # T.float16(1.0001) was 1.0001 in the kernel (no fp16 holds it; it is 1.0).
    @T.prim_func
    def constants(C: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=1) as _:
            C[0] = T.cast(T.dtype(dtype)(1.0001), "float32")
            C[1] = T.cast(T.dtype(dtype)(0.1), "float32")

    kernel = tl_jit.compile(constants, out_idx=[-1], target=target)
    narrow = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    expected = np.array([1.0001, 0.1], np.float32).astype(narrow).astype(np.float32)
    np.testing.assert_array_equal(kernel(), expected)


def _bfloat16_exp() -> Any:
    @T.prim_func
    def bfloat16_exp(
        A: T.Tensor((4, 8), "bfloat16"),
        Staged: T.Tensor((4, 8), "float32"),
        Direct: T.Tensor((4, 8), "float32"),
        Larger: T.Tensor((4, 8), "bfloat16"),
    ):
        with T.Kernel(1, threads=32):
            tile = T.alloc_fragment((4, 8), "float32")
            T.copy(A, tile)
            for i, j in T.Parallel(4, 8):
                Staged[i, j] = T.exp(tile[i, j])
            for i, j in T.Parallel(4, 8):
                Direct[i, j] = T.exp2(T.cast(A[i, j], "float32") - T.float32(1.0))
            for i, j in T.Parallel(4, 8):
                Larger[i, j] = T.max(A[i, j] * T.bfloat16(2), T.max(A[i, j], A[3 - i, j]))

    return bfloat16_exp


@pytest.mark.parametrize("target", TARGETS)
def test_math_on_values_read_from_bfloat16(target: str) -> None:
    # TVM's bfloat16 legalization left a bfloat16 load inside a Let's value alone: it
    # was converted as the integer its bits spell (0.5 -> 16128.0), so T.exp of any
    # value read from a bfloat16 tensor (cpu-vectorize-exp binds its argument) was inf.
    kernel = tl_jit.compile(_bfloat16_exp(), out_idx=[1, 2, 3], target=target)
    a = np.linspace(-3, 3, 32).reshape(4, 8).astype(ml_dtypes.bfloat16)
    staged, direct, larger = kernel(a)
    wide = a.astype(np.float32)
    np.testing.assert_allclose(staged, np.exp(wide), rtol=1e-6)
    np.testing.assert_allclose(direct, np.exp2(wide - 1), rtol=1e-6)
    doubled = (wide * 2).astype(ml_dtypes.bfloat16).astype(np.float32)
    expected = np.maximum(doubled, np.maximum(wide, wide[::-1]))
    np.testing.assert_array_equal(larger.astype(np.float32), expected)


def _bfloat16_chain(depth: int) -> Any:
    def chain(a: Any) -> Any:
        x = a
        for _ in range(depth):
            x = x * a + a
        return x

    @T.prim_func
    def bfloat16_chain(A: T.Tensor((64,), "bfloat16"), B: T.Tensor((64,), "bfloat16")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(64):
                B[i] = chain(A[i])

    return bfloat16_chain


def test_nested_bfloat16_arithmetic_builds_and_rounds_each_step() -> None:
    """Four nested bf16 operations: each rounds (as ml_dtypes), and the C source stays
    small (each nesting level used to repeat its operand four times: 420 kB here, and
    eight levels took minutes to build)."""
    depth = 2
    kernel = tl_jit.compile(_bfloat16_chain(depth), target="c")
    assert len(kernel.get_kernel_source()) < 100_000
    rng = np.random.default_rng(1)
    a = (rng.random(64) * 0.5).astype(ml_dtypes.bfloat16)
    b = np.zeros(64, ml_dtypes.bfloat16)
    kernel(a, b)
    want = a.copy()
    for _ in range(depth):
        want = (want * a).astype(ml_dtypes.bfloat16)
        want = (want + a).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize("target", TARGETS)
def test_a_bfloat16_constant_branch_of_a_select_keeps_its_value(target: str) -> None:
    # c printed it with seven digits: 2**24 (exact in bfloat16) arrived as 16777220.
    @T.prim_func
    def select_constant(
        X: T.Tensor((4,), "bfloat16"), Y: T.Tensor((4,), "bfloat16"), Out: T.Tensor((4,), "float32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(4):
                Out[i] = T.cast(
                    T.if_then_else(X[i] <= T.bfloat16(-1.0), Y[i], T.bfloat16(16777216.0)),
                    "float32",
                )

    x = np.array([15.0, -2.0, 0.0, 3.0], np.float32).astype(ml_dtypes.bfloat16)
    y = np.full(4, 7.0, np.float32).astype(ml_dtypes.bfloat16)
    o = np.zeros(4, np.float32)
    tl_jit.compile(select_constant, target=target)(x, y, o)
    np.testing.assert_array_equal(o, [16777216.0, 7.0, 16777216.0, 16777216.0])
