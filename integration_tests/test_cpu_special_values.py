"""IEEE special values (T.infinity, NaN) compile and run on both CPU targets.

TVM's C printer writes them as bare ``inff``/``inf`` names; the C toolchain
must define them (a gcc "undeclared" error otherwise).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from tl_codegen_cpu.c_patches import insert_special_float_constants


def _clamp_to_finite(n: int, dtype: str) -> Any:
    @T.prim_func
    def clamp(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=32) as _bx:
            for i in T.Parallel(n):
                B[i] = T.if_then_else(
                    A[i] == T.infinity(dtype),
                    T.cast(-1, dtype),
                    T.max(A[i], -T.infinity(dtype)),
                )

    return clamp


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_infinity_compiles_and_compares(target: str, dtype: str, tmp_path: Any) -> None:
    kernel = tl_jit.compile(_clamp_to_finite(40, dtype), out_idx=[-1], target=target)
    a = np.arange(40, dtype=dtype)
    a[3] = np.inf
    a[5] = -np.inf
    expected = np.where(a == np.inf, -1, a).astype(dtype)
    np.testing.assert_array_equal(kernel(a), expected)


def test_special_names_are_defined_only_when_used() -> None:
    source = "#include <math.h>\nfloat f(float x) { return x < inff ? x : -inff; }\n"
    patched = insert_special_float_constants(source)
    assert "#define inff __builtin_inff()" in patched
    assert "#define inf __builtin_inf()" not in patched  # `inff` is not a use of `inf`
    untouched = "int info(int inferred) { return inferred; }\n"
    assert insert_special_float_constants(untouched) == untouched


@pytest.mark.parametrize("adapter", ["cython", "tvm_ffi"])
def test_a_ceildiv_grid_near_the_int32_limit_runs_every_block(adapter: str) -> None:
    # T.ceildiv(n, 2**20) was (n + 2**20 - 1) >> 20 in int32: for n above 2**31 - 2**20
    # the grid was negative and the kernel returned having written nothing.
    import tl_jit
    import tl_jit.language as T

    @T.prim_func
    def blocks(n: T.int32, C: T.Tensor((2048,), "int32")):
        with T.Kernel(T.ceildiv(n, 1 << 20), threads=1) as bx:
            C[bx] = 1

    kernel = tl_jit.compile(blocks, target="c", execution_backend=adapter)
    for n in (1, 2**20, 2**20 + 1, 2**31 - 2**20, 2**31 - 2**20 + 1, 2**31 - 1):
        counted = np.zeros(2048, np.int32)
        kernel(n, counted)
        assert int(counted.sum()) == -(-n // 2**20), n


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_max_and_min_of_infinite_rows_are_infinite(target: str, dtype: str) -> None:
    # A row of -inf (a fully masked attention row) reduced to -FLT_MAX (-65504 for fp16):
    # the reduction started from the lowest finite value instead of -inf.
    import ml_dtypes

    @T.prim_func
    def extremes(A: T.Tensor((2, 8), dtype), B: T.Tensor((2,), dtype), C: T.Tensor((2,), dtype)):
        with T.Kernel(1, threads=1) as _:
            a = T.alloc_fragment((2, 8), dtype)
            high = T.alloc_fragment((2,), dtype)
            low = T.alloc_fragment((2,), dtype)
            T.copy(A, a)
            T.reduce_max(a, high, dim=1)
            T.reduce_min(a, low, dim=1)
            T.copy(high, B)
            T.copy(low, C)

    kernel = tl_jit.compile(extremes, out_idx=[1, 2], target=target)
    numpy_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    a = np.full((2, 8), -np.inf, numpy_dtype)
    a[1] = np.inf
    high, low = kernel(a)
    assert high.astype(np.float64).tolist() == [-np.inf, np.inf]
    assert low.astype(np.float64).tolist() == [-np.inf, np.inf]


def _reciprocal_of_abs(dtype: str) -> Any:
    @T.prim_func
    def reciprocal_of_abs(A: T.Tensor((4,), dtype), B: T.Tensor((4,), dtype)):
        T.assume(A[0] == A[0])  # an optimizer hint: the c code generator had no rule for it
        with T.Kernel(1, threads=1) as _bx:
            for i in T.serial(4):
                B[i] = T.float32(1).astype(dtype) / T.abs(A[i])

    return reciprocal_of_abs


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_abs_of_negative_zero_is_positive_zero(target: str, dtype: str) -> None:
    # c wrote abs as `x < 0 ? -x : x`, which keeps -0.0: 1 / T.abs(-0.0) was -inf.
    kernel = tl_jit.compile(_reciprocal_of_abs(dtype), out_idx=[-1], target=target)
    a = np.array([-0.0, 0.0, -2.0, np.nan], dtype)
    np.testing.assert_array_equal(kernel(a), np.array([np.inf, np.inf, 0.5, np.nan], dtype))


def _exp_of_constants() -> Any:
    @T.prim_func
    def exp_of_constants(A: T.Tensor((16,), "float32"), B: T.Tensor((4, 16), "float32")):
        with T.Kernel(1, threads=32) as _bx:
            for i in T.Parallel(16):
                B[0, i] = T.exp(T.float32(0.5))
                B[1, i] = T.exp2(T.float32(1.5)) + A[i]
                B[2, i] = T.exp(A[i] * T.float32(0.0))
                B[3, i] = T.exp(-T.infinity("float32")) + A[i]

    return exp_of_constants


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_exp_of_an_argument_that_folds_to_a_constant(target: str) -> None:
    # cpu-vectorize-exp works on the bits of its argument; once the simplifier made it
    # a constant, TVM's C printer wrote `*(int *)(&(1065353216))`, which gcc refuses.
    kernel = tl_jit.compile(_exp_of_constants(), out_idx=[-1], target=target)
    a = np.arange(16, dtype=np.float32)
    got = kernel(a)
    want = np.stack([np.full(16, np.exp(0.5)), np.exp2(1.5) + a, np.ones(16), a])
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=3e-7)
