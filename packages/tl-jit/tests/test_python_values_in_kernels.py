"""Issue 20: dtypes, strings, ``None`` and dicts assigned inside a kernel body stay
Python values, in the classic ``@T.prim_func`` body as in the eager ``@tl_jit.jit``
body (TileLang's online softmax and GEMM examples write ``accum_dtype = T.float32``
inside the body, then pass it to ``T.alloc_fragment`` and ``T.cast``). Every kernel
builds for ``c``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T

M, N = 8, 4


def classic_scaled(scale: Any = None) -> Any:
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float32")):
        accum_dtype = T.float32  # before the launch
        with T.Kernel(1, threads=1) as _bx:
            dt = "float16"  # inside the launch
            half, wide = "float16", T.float32  # unpacked
            factors = {"float16": 2, "float32": 3}
            nothing = None
            acc = T.alloc_fragment((M, N), accum_dtype)
            for i, j in T.Parallel(M, N):
                acc[i, j] = T.cast(A[i, j], wide) * factors[half]
            if nothing is None and scale is not None:
                for i, j in T.Parallel(M, N):
                    acc[i, j] = acc[i, j] * scale
            for i, j in T.Parallel(M, N):
                B[i, j] = T.cast(T.cast(acc[i, j], dt), accum_dtype)

    return main


@pytest.mark.parametrize(("scale", "factor"), [(None, 2), (5, 10)])
def test_a_classic_body_keeps_dtypes_strings_none_and_dicts_as_python_values(
    cache_dir: Path, scale: Any, factor: int
) -> None:
    kernel = tl_jit.compile(classic_scaled(scale), out_idx=[1], target="c")
    a = np.arange(M * N, dtype=np.float16).reshape(M, N)
    np.testing.assert_array_equal(kernel(a), factor * a.astype(np.float32))


def test_a_number_assigned_in_a_classic_body_stays_a_kernel_scalar(cache_dir: Path) -> None:
    # Numbers keep TVM's meaning: a mutable scalar the loop updates at run time.
    @T.prim_func
    def running(A: T.Tensor((M,), "int32"), B: T.Tensor((M,), "int32")):
        total_dtype = "int32"
        with T.Kernel(1, threads=1) as _bx:
            total = 0
            for i in T.serial(M):
                total = total + T.cast(A[i], total_dtype)
                B[i] = total

    kernel = tl_jit.compile(running, out_idx=[1], target="c")
    a = np.arange(1, M + 1, dtype=np.int32)
    np.testing.assert_array_equal(kernel(a), np.cumsum(a))


def test_an_eager_body_keeps_the_same_values(cache_dir: Path) -> None:
    @tl_jit.jit(target="c")
    def scaled(A):
        rows, cols = T.const("rows, cols")
        A: T.Tensor((rows, cols), T.float16)
        B = T.empty((rows, cols), T.float32)
        accum_dtype = T.float32
        with T.Kernel(1, threads=1) as _bx:
            dt = "float16"
            half, wide = "float16", T.float32
            factors = {"float16": 2}
            acc = T.alloc_fragment((rows, cols), accum_dtype)
            for i, j in T.Parallel(rows, cols):
                acc[i, j] = T.cast(A[i, j], wide) * factors[half]
            for i, j in T.Parallel(rows, cols):
                B[i, j] = T.cast(T.cast(acc[i, j], dt), accum_dtype)
        return B

    a = np.arange(M * N, dtype=np.float16).reshape(M, N)
    np.testing.assert_array_equal(scaled(a), 2 * a.astype(np.float32))
