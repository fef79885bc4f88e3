"""A float converted to an integer type saturates on the CPU targets and in the
reference interpreter, as on GPUs (PTX ``cvt.rzi``: truncated, clamped to the type's
range, NaN giving 0). Before, c and llvm gave x86's "integer indefinite" (INT_MIN for
3e9, NaN and inf; int8 of 130.7 was -126) and the interpreter raised on NaN."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T

VALUES = [3e9, -3e9, np.nan, np.inf, -np.inf, -2.5, 130.7, 5e9, 0.99, -0.99]


def _conversions(source: str) -> Any:
    n = len(VALUES)

    @T.prim_func
    def conversions(
        A: T.Tensor((n,), source),
        Ints: T.Tensor((n,), "int32"),
        U: T.Tensor((n,), "uint32"),
        S: T.Tensor((n,), "int8"),
        W: T.Tensor((n,), "uint16"),
        L: T.Tensor((n,), "int64"),
    ):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(n):
                Ints[i] = T.Cast("int32", A[i])
                U[i] = T.Cast("uint32", A[i])
                S[i] = T.Cast("int8", A[i])
                W[i] = T.Cast("uint16", A[i])
                L[i] = T.Cast("int64", A[i])

    return conversions


def _saturated(values: np.ndarray, dtype: Any) -> np.ndarray:
    info = np.iinfo(dtype)
    out = []
    for v in values.astype(np.float64):
        if np.isnan(v):
            out.append(0)
        elif v >= info.max + 1:
            out.append(info.max)
        elif v < info.min:
            out.append(info.min)
        else:
            out.append(int(v))
    return np.array(out, dtype)


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
@pytest.mark.parametrize("source", ["float32", "float64", "float16"])
def test_float_to_int_saturates(target: str, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
    kernel = tl_jit.compile(_conversions(source), target="c" if target == "interpreter" else target)
    with np.errstate(over="ignore"):
        a = np.array(VALUES).astype(source)
    outs = [np.zeros(len(VALUES), d) for d in (np.int32, np.uint32, np.int8, np.uint16, np.int64)]
    kernel(a, *outs)
    for out in outs:
        np.testing.assert_array_equal(out, _saturated(a, out.dtype), err_msg=str(out.dtype))


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_a_clamped_quantization_is_left_as_written(target: str) -> None:
    @T.prim_func
    def quantize(A: T.Tensor((6,), "float32"), S: T.Tensor((6,), "int8")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(6):
                S[i] = T.Cast("int8", T.clamp(A[i] * 127.0, -128.0, 127.0))

    kernel = tl_jit.compile(quantize, target=target)
    a = np.array([0.5, -0.5, 2.0, -2.0, np.nan, 1.0], np.float32)
    s = np.zeros(6, np.int8)
    kernel(a, s)
    # A NaN clamps to a bound (float max/min ignore NaN): -128.
    np.testing.assert_array_equal(s, [63, -63, 127, -128, -128, 127])


def _tile_conversions() -> Any:
    @T.prim_func
    def tile_conversions(
        A: T.Tensor((4, 8), "float32"),
        C: T.Tensor((4, 8), "int8"),
        M: T.Tensor((4,), "int32"),
        H: T.Tensor((4, 8), "float16"),
        S: T.Tensor((4, 8), "float32"),
    ):
        with T.Kernel(1, threads=32):
            tile = T.alloc_fragment((4, 8), "float32")
            best = T.alloc_fragment((4,), "int32")
            half = T.alloc_fragment((4, 8), "float16")
            sums = T.alloc_fragment((4, 8), "float32")
            T.copy(A, tile)
            T.copy(tile, C)
            T.reduce_max(tile, best, dim=1)
            T.copy(best, M)
            T.copy(H, half)
            T.cumsum(half, sums, dim=1)  # scanned in float32, the destination's dtype
            T.copy(sums, S)

    return tile_conversions


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
def test_tile_ops_convert_as_the_targets(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The interpreter's T.copy / T.reduce into an integer tile saturate too, and its
    T.cumsum scans in the destination's dtype (it used numpy's casts and scanned in
    float16)."""
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
    kernel = tl_jit.compile(_tile_conversions(), target="c" if target == "interpreter" else target)
    a = np.array([[np.nan, np.inf, -np.inf, 300.7, -300.7, 1e10, 2.9, -2.9]] * 4, np.float32)
    a[1] = np.linspace(-1e10, 1e10, 8, dtype=np.float32)
    h = (np.arange(32).reshape(4, 8) * 41.3 + 0.37).astype(np.float16)
    c, m = np.zeros((4, 8), np.int8), np.zeros(4, np.int32)
    s = np.zeros((4, 8), np.float32)
    kernel(a, c, m, h, s)
    np.testing.assert_array_equal(c, _saturated(a.ravel(), np.int8).reshape(4, 8))
    row_max = np.fmax.reduce(a, axis=1, initial=-np.inf)
    np.testing.assert_array_equal(m, _saturated(row_max, np.int32))
    np.testing.assert_allclose(s, np.cumsum(h.astype(np.float32), axis=1), rtol=1e-6)


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
def test_constants_convert_as_a_cast(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``T.fill(int8_tile, 300.5)`` and friends: the constant converts as ``T.cast``
    would (TVM refused the literal with an internal check message)."""
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")

    @T.prim_func
    def fills(
        A: T.Tensor((4,), "int8"),
        B: T.Tensor((4,), "uint8"),
        C: T.Tensor((4,), "bool"),
        D: T.Tensor((4,), "int32"),
    ):
        with T.Kernel(1, threads=1):
            T.fill(A, 300.5)
            T.fill(B, -1)
            T.fill(C, 2)
            T.fill(D, 5_000_000_000)

    a, b = np.zeros(4, np.int8), np.zeros(4, np.uint8)
    c, d = np.zeros(4, np.bool_), np.zeros(4, np.int32)
    tl_jit.compile(fills, target="c" if target == "interpreter" else target)(a, b, c, d)
    assert a.tolist() == [127] * 4 and b.tolist() == [255] * 4
    assert c.tolist() == [True] * 4 and d.tolist() == [5_000_000_000 - 2**32] * 4
