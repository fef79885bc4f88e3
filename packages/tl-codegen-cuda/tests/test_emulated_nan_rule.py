"""Float max/min ignore a NaN operand on the CUDA lowering, as ``fmaxf``/``fminf`` do
(PTX ``max.f32``: the other operand, NaN only when both are): rows holding NaN at any
position reduce to the largest number in them, a row of NaN to the identity, under the
CPU emulation, whose ``max``/``min`` of floats are ``std::fmax``/``std::fmin``. The CPU
targets give the same answers (integration_tests/test_nan_max_min.py)."""

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

ROWS, COLS = 8, 64


def _row_max_min() -> Any:
    @T.prim_func
    def row_max_min(
        A: T.Tensor((ROWS, COLS), "float32"),
        B: T.Tensor((ROWS, COLS), "float32"),
        Mx: T.Tensor((ROWS,), "float32"),
        Mn: T.Tensor((ROWS,), "float32"),
        C: T.Tensor((ROWS, COLS), "float32"),
    ):
        with T.Kernel(1, threads=128):
            tile = T.alloc_fragment((ROWS, COLS), "float32")
            largest = T.alloc_fragment((ROWS,), "float32")
            smallest = T.alloc_fragment((ROWS,), "float32")
            T.copy(A, tile)
            T.reduce_max(tile, largest, dim=1)
            T.reduce_min(tile, smallest, dim=1)
            T.copy(largest, Mx)
            T.copy(smallest, Mn)
            for i, j in T.Parallel(ROWS, COLS):
                C[i, j] = T.max(A[i, j], B[i, j]) - T.min(A[i, j], B[i, j])

    return row_max_min


def nan_rows() -> tuple[np.ndarray, np.ndarray]:
    """Rows with NaN first, last, everywhere, every 7th, nowhere; B with NaN too."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    a[0, 0] = np.nan
    a[1, -1] = np.nan
    a[2, :] = np.nan
    a[3, 5::7] = np.nan
    a[4, 32] = np.nan
    b = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    b[::2, 1::3] = np.nan
    return a, b


def expected(a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """fmax/fmin from the identity: what PTX max.f32/min.f32 give."""
    return {
        "Mx": np.fmax.reduce(a, axis=1, initial=-np.inf),
        "Mn": np.fmin.reduce(a, axis=1, initial=np.inf),
        "C": np.fmax(a, b) - np.fmin(a, b),
    }


def test_max_min_ignore_nan_under_emulation() -> None:
    a, b = nan_rows()
    arrays = {
        "A": a,
        "B": b,
        "Mx": np.zeros(ROWS, np.float32),
        "Mn": np.zeros(ROWS, np.float32),
        "C": np.zeros_like(a),
    }
    emu.emulate(_row_max_min(), arrays)
    for name, want in expected(a, b).items():
        np.testing.assert_array_equal(arrays[name], want, err_msg=name)


def _atomic_max_min(dtype: str) -> Any:
    @T.prim_func
    def atomic_max_min(
        A: T.Tensor((4, 32), dtype), Mx: T.Tensor((4,), dtype), Mn: T.Tensor((4,), dtype)
    ):
        with T.Kernel(4, threads=32) as bx:
            for j in T.Parallel(32):
                T.atomic_max(Mx[bx], A[bx, j])
                T.atomic_min(Mn[bx], A[bx, j])

    return atomic_max_min


def atomic_nan_cases(dtype: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Float atomic max/min write a value only when it is larger (smaller): a NaN value
    never lands, a NaN already in memory stays (TileLang's CAS loops; the CPU's)."""
    a = np.arange(128, dtype=dtype).reshape(4, 32) - 40
    a[0, 3] = np.nan
    a[1, ::2] = np.nan
    a[3, :] = np.nan
    start = np.array([0.0, np.nan, 5.0, 1.0], dtype)
    arrays = {"A": a, "Mx": start.copy(), "Mn": start.copy()}
    largest = np.fmax(np.fmax.reduce(a, axis=1, initial=-np.inf), start)
    smallest = np.fmin(np.fmin.reduce(a, axis=1, initial=np.inf), start)
    largest[1] = smallest[1] = np.nan  # NaN in memory stays
    return arrays, {"Mx": largest, "Mn": smallest}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_atomic_max_min_never_write_nan_under_emulation(dtype: str) -> None:
    # The CUDA CAS loops wrote a NaN value (and replaced a NaN in memory).
    arrays, want = atomic_nan_cases(dtype)
    emu.emulate(_atomic_max_min(dtype), arrays)
    for name, expected_values in want.items():
        np.testing.assert_array_equal(arrays[name], expected_values, err_msg=name)
