"""Float max/min ignore a NaN operand on the CPU targets and the interpreter, as on GPUs.

CUDA's ``fmaxf``/``fminf`` (PTX ``max.f32``/``min.f32``), which ``T.max``/``T.min``
and TileLang's max/min reductions compile to, return the operand that is not NaN, and
NaN only when both are. TVM's CPU code was ``a > b ? a : b``: a NaN survived in one
operand position and vanished in the other, so a row whose NaN came first reduced to
its largest number and a row whose NaN came last to NaN. Every float max/min now
follows the GPU (`cpu-max-min-ignore-nan`, the reduction emitters): a reduction gives
the largest number of its row, a row of NaN the identity (-inf for max), and
``clear=False`` treats a NaN already in the destination like any other NaN. The CUDA
lowering is checked under the emulation (tl-codegen-cuda's test_emulated_nan_rule.py).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from integration_tests.interpreter_target import compile_for

ROWS, COLS = 6, 64
TARGETS = ["c", "llvm", "interpreter"]
DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16}
DTYPES["bfloat16"] = ml_dtypes.bfloat16
KINDS = ["max", "min", "absmax"]


def _reductions(dtype: str) -> Any:
    # KINDS, in order: the parser takes no Python loops.
    @T.prim_func
    def reductions(
        A: T.Tensor((ROWS, COLS), dtype),
        B: T.Tensor((ROWS, COLS), dtype),
        Old: T.Tensor((3, ROWS), dtype),
        Cleared: T.Tensor((3, ROWS), dtype),
        Folded: T.Tensor((3, ROWS), dtype),
        C: T.Tensor((ROWS, COLS), dtype),
    ):
        with T.Kernel(1, threads=1):
            tile = T.alloc_fragment((ROWS, COLS), dtype)
            fresh = T.alloc_fragment((ROWS,), dtype)
            onto = T.alloc_fragment((ROWS,), dtype)
            T.copy(A, tile)
            T.reduce(tile, fresh, 1, "max", True)
            T.copy(Old[0, 0], onto)
            T.reduce(tile, onto, 1, "max", False)
            T.copy(fresh, Cleared[0, 0])
            T.copy(onto, Folded[0, 0])
            T.reduce(tile, fresh, 1, "min", True)
            T.copy(Old[1, 0], onto)
            T.reduce(tile, onto, 1, "min", False)
            T.copy(fresh, Cleared[1, 0])
            T.copy(onto, Folded[1, 0])
            T.reduce(tile, fresh, 1, "absmax", True)
            T.copy(Old[2, 0], onto)
            T.reduce(tile, onto, 1, "absmax", False)
            T.copy(fresh, Cleared[2, 0])
            T.copy(onto, Folded[2, 0])
            for i, j in T.Parallel(ROWS, COLS):
                C[i, j] = T.max(A[i, j], B[i, j]) + T.min(B[i, j], A[i, j])

    return reductions


def _inputs(dtype: Any) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((ROWS, COLS))
    a[0, 0] = np.nan  # first
    a[1, -1] = np.nan  # last
    a[2, :] = np.nan  # everywhere
    a[3, 5::7] = np.nan  # scattered
    a[4, 33] = np.nan  # in the middle
    b = rng.standard_normal((ROWS, COLS))
    b[::2, 1::3] = np.nan
    b[2, ::2] = np.nan
    old = np.tile(np.array([np.nan, 0.5, np.nan, -9.0, 9.0, np.nan]), (3, 1))
    return {
        "A": a.astype(dtype),
        "B": b.astype(dtype),
        "Old": old.astype(dtype),
        "Cleared": np.zeros((3, ROWS), dtype),
        "Folded": np.zeros((3, ROWS), dtype),
        "C": np.zeros((ROWS, COLS), dtype),
    }


def _expected(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    a = arrays["A"].astype(np.float64)
    b = arrays["B"].astype(np.float64)
    cleared, folded = [], []
    for k, kind in enumerate(KINDS):
        rows = np.abs(a) if kind == "absmax" else a
        fold = np.fmin if kind == "min" else np.fmax
        identity = {"max": -np.inf, "min": np.inf, "absmax": 0.0}[kind]
        cleared.append(fold.reduce(rows, axis=1, initial=identity))
        folded.append(fold(arrays["Old"][k].astype(np.float64), cleared[-1]))
    return {
        "Cleared": np.array(cleared),
        "Folded": np.array(folded),
        "C": np.fmax(a, b) + np.fmin(b, a),
    }


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("target", TARGETS)
def test_max_min_and_reductions_ignore_nan(
    target: str, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
        kernel = tl_jit.compile(_reductions(dtype), target="c")
    else:
        kernel = tl_jit.compile(_reductions(dtype), target=target)
    arrays = _inputs(DTYPES[dtype])
    kernel(*arrays.values())
    for name, want in _expected(arrays).items():
        got = arrays[name].astype(np.float64)
        rounded = want.astype(DTYPES[dtype]).astype(np.float64)
        np.testing.assert_array_equal(got, rounded, err_msg=f"{name} on {target}, {dtype}")


def _scans_and_warps() -> Any:
    @T.prim_func
    def scans_and_warps(
        A: T.Tensor((ROWS, 32), "float32"),
        Running: T.Tensor((ROWS, 32), "float32"),
        Warp: T.Tensor((ROWS,), "float32"),
    ):
        with T.Kernel(ROWS, threads=32) as row:
            tile = T.alloc_shared((1, 32), "float32")
            scanned = T.alloc_shared((1, 32), "float32")
            T.copy(A[row, 0], tile)
            T.cummax(tile, scanned, dim=1)
            T.copy(scanned, Running[row, 0])
            lane = T.get_thread_binding(0)
            best = T.warp_reduce_max(A[row, lane])
            if lane == 0:
                Warp[row] = best

    return scans_and_warps


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_running_and_warp_maxima_ignore_nan(target: str) -> None:
    kernel = tl_jit.compile(_scans_and_warps(), target=target)
    a = np.random.default_rng(8).standard_normal((ROWS, 32)).astype(np.float32)
    a[0, 0] = np.nan
    a[1, -1] = np.nan
    a[2, :] = np.nan
    a[3, 3::5] = np.nan
    running = np.zeros_like(a)
    warp = np.zeros(ROWS, np.float32)
    kernel(a, running, warp)
    # From the identity, as the reductions: a leading NaN gives -inf.
    np.testing.assert_array_equal(running, np.fmax.accumulate(np.fmax(a, -np.inf), axis=1))
    np.testing.assert_array_equal(warp, np.fmax.reduce(a, axis=1))


def _self_comparisons(dtype: str) -> Any:
    @T.prim_func
    def self_comparisons(F: T.Tensor((4,), dtype), Out: T.Tensor((2, 4), "int32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                Out[0, i] = T.if_then_else(F[i] == F[i], 1, 0)
                Out[1, i] = T.if_then_else(F[i] != F[i], 1, 0)

    return self_comparisons


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("target", ["c", "llvm"])
def test_self_comparison_is_a_nan_test(target: str, dtype: str) -> None:
    # TVM's simplifier folded `x == x` to true and `x != x` to false, NaN or not.
    kernel = tl_jit.compile(_self_comparisons(dtype), out_idx=[-1], target=target)
    f = np.array([np.nan, 1.0, -np.inf, -0.0]).astype(DTYPES[dtype])
    nan = np.isnan(f.astype(np.float64))
    np.testing.assert_array_equal(kernel(f), np.stack([~nan, nan]).astype(np.int32))


def _comparisons(dtype: str) -> Any:
    @T.prim_func
    def comparisons(
        A: T.Tensor((6,), dtype), B: T.Tensor((6,), dtype), Out: T.Tensor((8, 6), "int32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(6):
                Out[0, i] = T.if_then_else(A[i] != B[i], 1, 0)
                Out[1, i] = T.if_then_else(T.Not(A[i] < B[i]), 1, 0)
                Out[2, i] = T.if_then_else(T.Not(A[i] <= B[i]), 1, 0)
                Out[3, i] = T.if_then_else(T.Not(A[i] > B[i]), 1, 0)
                Out[4, i] = T.if_then_else(T.Not(A[i] >= B[i]), 1, 0)
                Out[5, i] = T.if_then_else(T.Not(A[i] == B[i]), 1, 0)
                Out[6, i] = T.if_then_else(T.Not(A[i] != B[i]), 1, 0)
                if A[i] != B[i]:
                    Out[7, i] = 1
                else:
                    Out[7, i] = 0

    return comparisons


COMPARED = {**DTYPES, "float8_e4m3fn": ml_dtypes.float8_e4m3fn}
COMPARED["float8_e5m2"] = ml_dtypes.float8_e5m2


@pytest.mark.parametrize("dtype", list(COMPARED))
@pytest.mark.parametrize("target", TARGETS)
def test_comparisons_with_nan_keep_their_ieee_value(target: str, dtype: str) -> None:
    # TVM's simplifier made !(a < b) into a >= b (false for NaN), and its LLVM code
    # emitted a != b as an ordered compare (false for NaN), on every float type; float8
    # values were compared as their codes (NaN a number, 0.0 != -0.0, on c negative
    # values as bytes).
    kernel = compile_for(_comparisons(dtype), target, out_idx=[-1])
    a = np.array([np.nan, 1.0, np.nan, 2.0, -0.0, -1.0]).astype(COMPARED[dtype])
    b = np.array([1.0, np.nan, np.nan, 2.0, 0.0, -3.0]).astype(COMPARED[dtype])
    x, y = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):
        expected = [x != y, ~(x < y), ~(x <= y), ~(x > y), ~(x >= y), ~(x == y), ~(x != y), x != y]
    np.testing.assert_array_equal(kernel(a, b), np.stack(expected).astype(np.int32))


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


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("target", TARGETS)
def test_atomic_max_min_never_write_nan(
    target: str, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Written only when larger (smaller), as TileLang's CAS loops: a NaN value never
    # lands, a NaN in memory stays (the interpreter took np.maximum: NaN landed).
    a = np.arange(128, dtype=dtype).reshape(4, 32) - 40
    a[0, 3] = np.nan
    a[1, ::2] = np.nan
    a[3, :] = np.nan
    start = np.array([0.0, np.nan, 5.0, 1.0], dtype)
    mx, mn = start.copy(), start.copy()
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
    kernel = tl_jit.compile(
        _atomic_max_min(dtype), target="c" if target == "interpreter" else target
    )
    kernel(a, mx, mn)
    largest = np.fmax(np.fmax.reduce(a, axis=1, initial=-np.inf), start)
    smallest = np.fmin(np.fmin.reduce(a, axis=1, initial=np.inf), start)
    largest[1] = smallest[1] = np.nan
    np.testing.assert_array_equal(mx, largest)
    np.testing.assert_array_equal(mn, smallest)
