"""8- and 16-bit integer arithmetic wraps at its width on the CUDA lowering
(``gpu-wrap-narrow-integers``): C++ promotes narrow operands to ``int``, so before the
pass an unwrapped ``a + a`` was compared, divided or max'ed as an ``int`` (uint8
``T.max(a >> 2, a + a) // 3`` gave 89 for 134, not 11; int8 ``a + a < a`` was
inverted). Values under the CPU emulation against numpy; the source compiles with nvcc."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
N = 8


def _uint8_max_div() -> Any:
    @T.prim_func
    def uint8_max_div(A: T.Tensor((N,), "uint8"), Out: T.Tensor((N,), "uint8")):
        with T.Kernel(1, threads=N):
            for i in T.Parallel(N):
                Out[i] = T.max(A[i] >> T.uint8(2), A[i] + A[i]) // T.uint8(3)

    return uint8_max_div


def _int8_overflow_check() -> Any:
    @T.prim_func
    def int8_overflow_check(A: T.Tensor((N,), "int8"), Out: T.Tensor((N,), "int32")):
        with T.Kernel(1, threads=N):
            for i in T.Parallel(N):
                Out[i] = T.if_then_else(A[i] + A[i] < A[i], 1, 0)

    return int8_overflow_check


def _narrow_mix() -> Any:
    @T.prim_func
    def narrow_mix(
        A: T.Tensor((N,), "uint8"),
        H: T.Tensor((N,), "int16"),
        U: T.Tensor((N,), "uint16"),
        Q: T.Tensor((N,), "uint8"),
        W: T.Tensor((N,), "int32"),
        S: T.Tensor((N,), "int16"),
        P: T.Tensor((N,), "float32"),
    ):
        with T.Kernel(1, threads=N):
            for i in T.Parallel(N):
                Q[i] = (~A[i]) // (A[i] | T.uint8(1))
                W[i] = T.cast(A[i] - A[(i + 1) % N], "int32")
                S[i] = T.min(H[i] * H[i], H[i]) >> T.int16(3)
                P[i] = T.cast(U[i] * U[i], "float32")

    return narrow_mix


def test_uint8_max_of_a_wrapped_sum_divides_the_wrapped_value() -> None:
    a = np.array([134, 255, 7, 200, 128, 1, 0, 100], np.uint8)
    arrays = {"A": a, "Out": np.zeros(N, np.uint8)}
    emu.emulate(_uint8_max_div(), arrays)
    want = np.maximum(a >> 2, (a + a).astype(np.uint8)) // 3
    np.testing.assert_array_equal(arrays["Out"], want)


def test_int8_overflow_check_sees_the_wrapped_sum() -> None:
    a = np.array([100, -100, 7, 127, -128, 1, 0, 64], np.int8)
    arrays = {"A": a, "Out": np.zeros(N, np.int32)}
    emu.emulate(_int8_overflow_check(), arrays)
    with np.errstate(over="ignore"):
        want = ((a + a) < a).astype(np.int32)
    np.testing.assert_array_equal(arrays["Out"], want)


def test_not_difference_product_and_min_wrap_at_their_width() -> None:
    a = np.array([159, 1, 2, 3, 100, 200, 255, 0], np.uint8)
    h = np.array([300, -300, 181, 7, -32768, 32767, 1000, -5], np.int16)
    u = np.array([65535, 300, 256, 40000, 1, 0, 255, 4097], np.uint16)
    arrays = {
        "A": a,
        "H": h,
        "U": u,
        "Q": np.zeros(N, np.uint8),
        "W": np.zeros(N, np.int32),
        "S": np.zeros(N, np.int16),
        "P": np.zeros(N, np.float32),
    }
    emu.emulate(_narrow_mix(), arrays)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(arrays["Q"], (~a) // (a | 1))
        np.testing.assert_array_equal(arrays["W"], (a - np.roll(a, -1)).astype(np.int32))
        np.testing.assert_array_equal(arrays["S"], np.minimum(h * h, h) >> 3)
        np.testing.assert_array_equal(arrays["P"], (u * u).astype(np.float32))


def test_the_source_casts_narrow_results_back_and_compiles(tmp_path: Path) -> None:
    source = emu.lower_for_cuda(_uint8_max_div()).files["main.cu"]
    assert "((uchar)(((uint)A_ptr" in source
    if not emu.check_nvcc_builds(source, tmp_path):
        pytest.skip("nvcc is not installed here")
