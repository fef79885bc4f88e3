"""Exact float8 <-> float32 casts on the CPU targets, checked against ml_dtypes.

Widening is checked on every one of the 256 codes of each format; narrowing on
a sweep of float32 values: every fp8 value, every midpoint between neighbours
(ties to even) and the float32 values next to it, zeros of both signs,
float32 subnormals, values past the largest finite fp8 value, infinities and
NaNs of both signs, and log-spaced values across float32's range. Results
are compared bit for bit (NaN by NaN-ness and sign), so -0.0 counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_jit
from integration_tests.interpreter_target import compile_for

ml_dtypes = pytest.importorskip("ml_dtypes")

TARGETS = ("c", "llvm")
FORMATS = ("float8_e4m3fn", "float8_e5m2")


def _cast_kernel(source: str, target: str, kind: str) -> Any:
    N = T.symbolic("N")

    @T.prim_func
    def cast(A: T.Tensor((N,), source), B: T.Tensor((N,), target)):
        with T.Kernel(1, threads=1):
            for i in T.serial(N):
                B[i] = T.Cast(target, A[i])

    return tl_jit.compile(cast, target=kind, out_idx=[1])


def _all_codes(fmt: str) -> Any:
    return np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, fmt))


def _float32_sweep(fmt: str) -> Any:
    finite = _all_codes(fmt).astype(np.float32)
    finite = np.unique(np.abs(finite[np.isfinite(finite)]))
    midpoints = (finite[:-1] + finite[1:]) / np.float32(2)  # exact: fp8 has few bits
    largest = finite[-1]
    # Past the largest value: the first tie above it (half a step), and beyond.
    step = largest - finite[-2]
    beyond = np.array(
        [largest + step / 2, largest + step, 2 * largest, 1e30, np.finfo(np.float32).max],
        np.float32,
    )
    specials = np.array(
        [0.0, np.inf, np.nan, np.finfo(np.float32).tiny, 1e-45, 3e-39, 1e-20], np.float32
    )
    spread = np.geomspace(1e-12, 1e6, 2000, dtype=np.float32)
    base = np.concatenate([finite, midpoints, beyond, specials, spread])
    # Upward neighbours of finite values only (the one above float32's max is inf, listed).
    below_max = base[base < np.finfo(np.float32).max]
    neighbours = np.concatenate(
        [np.nextafter(below_max, np.float32(np.inf)), np.nextafter(base, np.float32(0))]
    )
    magnitudes = np.concatenate([base, neighbours]).astype(np.float32)
    return np.concatenate([magnitudes, -magnitudes])


def _assert_same_float32(actual: Any, expected: Any) -> None:
    actual = np.asarray(actual, np.float32)
    expected = np.asarray(expected, np.float32)
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    finite = ~np.isnan(expected)
    np.testing.assert_array_equal(actual[finite].view(np.uint32), expected[finite].view(np.uint32))


@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_float8_code_widens_to_float32_exactly(kind: str, fmt: str) -> None:
    codes = _all_codes(fmt)
    out = _cast_kernel(fmt, "float32", kind)(codes)
    _assert_same_float32(out, codes.astype(np.float32))
    # NaN keeps its sign, as ml_dtypes' conversion does.
    nan = np.isnan(out)
    np.testing.assert_array_equal(np.signbit(out[nan]), np.signbit(codes.astype(np.float32)[nan]))


@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_float32_narrows_to_float8_like_ml_dtypes(kind: str, fmt: str) -> None:
    values = _float32_sweep(fmt)
    out = _cast_kernel("float32", fmt, kind)(values)
    assert out.dtype == np.dtype(getattr(ml_dtypes, fmt))
    expected = values.astype(getattr(ml_dtypes, fmt))
    mismatch = np.flatnonzero(out.view(np.uint8) != expected.view(np.uint8))
    assert mismatch.size == 0, [
        (float(values[i]), int(out.view(np.uint8)[i]), int(expected.view(np.uint8)[i]))
        for i in mismatch[:10]
    ]


@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize(("source", "target"), [(FORMATS[0], FORMATS[1]), (FORMATS[1], FORMATS[0])])
def test_float8_to_float8_rounds_once_like_ml_dtypes(kind: str, source: str, target: str) -> None:
    codes = _all_codes(source)
    out = _cast_kernel(source, target, kind)(codes)
    expected = codes.astype(np.float32).astype(getattr(ml_dtypes, target))
    np.testing.assert_array_equal(out.view(np.uint8), expected.view(np.uint8))


def _parallel_cast_kernel(source: str, target: str, kind: str) -> Any:
    @T.prim_func
    def cast(A: T.Tensor((256,), source), B: T.Tensor((256,), target)):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(256):  # vectorized on llvm
                B[i] = T.Cast(target, A[i])

    return tl_jit.compile(cast, target=kind, out_idx=[1])


@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("other", ["float16", "bfloat16", "float64"])
def test_float8_casts_to_and_from_other_floats_go_through_float32(
    kind: str, fmt: str, other: str
) -> None:
    fp8 = getattr(ml_dtypes, fmt)
    other_dtype = ml_dtypes.bfloat16 if other == "bfloat16" else np.dtype(other)
    codes = _all_codes(fmt)
    widened = _parallel_cast_kernel(fmt, other, kind)(codes).astype(np.float64)
    np.testing.assert_array_equal(widened, codes.astype(other_dtype).astype(np.float64))
    values = (np.random.default_rng(0).standard_normal(256) * 100).astype(other_dtype)
    values[:4] = [-0.0, np.nan, np.inf, 1e-6]
    narrowed = _parallel_cast_kernel(other, fmt, kind)(values)
    expected = values.astype(np.float32).astype(fp8)
    np.testing.assert_array_equal(narrowed.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_float8_arithmetic_rounds_each_operation_like_ml_dtypes(kind: str, fmt: str) -> None:
    N = T.symbolic("N")

    @T.prim_func
    def poly(A: T.Tensor((N,), fmt), B: T.Tensor((N,), fmt)):
        with T.Kernel(1, threads=1):
            for i in T.serial(N):
                B[i] = A[i] * A[i] + A[i]

    codes = _all_codes(fmt)
    out = tl_jit.compile(poly, target=kind, out_idx=[1])(codes).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        expected = (codes * codes + codes).astype(np.float32)
    _assert_same_float32(out, expected)


@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_float8_tile_written_twice_is_stored_as_its_codes(kind: str, fmt: str) -> None:
    """A float8 fragment filled, masked in place and copied out whole (TileLang's
    split-token fp8 cast does this) stays a tile of its exact codes on both targets: TVM
    widened such a tile to float32 and converted it back with a vector select that its
    LLVM code generator refused."""

    @T.prim_func
    def mask_then_copy(
        A: T.Tensor((16, 64), "float32"),
        rows: T.Tensor((2,), "int32"),
        B: T.Tensor((2, 8, 64), fmt),
        first: T.Tensor((2, 8), "float32"),
    ):
        with T.Kernel(2, threads=128) as bx:
            wide = T.alloc_fragment((8, 64), "float32")
            tile = T.alloc_fragment((8, 64), fmt)
            T.copy(A[bx * 8 : (bx + 1) * 8, 0:64], wide)
            T.copy(wide, tile)
            for i, j in T.Parallel(8, 64):
                tile[i, j] = T.if_then_else(i < rows[bx], wide[i, j], 0)
            for i in T.Parallel(8):
                first[bx, i] = wide[i, 0]
            T.copy(tile, B[bx, 0:8, 0:64])

    kernel = tl_jit.compile(mask_then_copy, target=kind, out_idx=[2, 3])
    a = _float32_sweep(fmt)[:1024].reshape(16, 64)
    got, _ = kernel(a, np.array([3, 5], np.int32))
    expected = a.astype(getattr(ml_dtypes, fmt)).reshape(2, 8, 64)
    expected[0, 3:] = 0
    expected[1, 5:] = 0
    assert got.dtype == expected.dtype
    _assert_same_float32(got.astype(np.float32), expected.astype(np.float32))


def _guarded_float8_reads(m: int, block: int, fmt: str, mode: str, pad: float) -> Any:
    padded = -(-m // block) * block

    @T.prim_func
    def guarded_reads(
        A: T.Tensor((m,), fmt),
        offset: T.Tensor((1,), "int32"),
        wide: T.Tensor((padded,), "float32"),
        codes: T.Tensor((padded,), fmt),
        direct: T.Tensor((padded,), fmt),
    ):
        with T.Kernel(T.ceildiv(m, block), threads=block) as bx:
            tile = T.alloc_shared((block,), fmt)
            if mode == "copy":
                T.copy(A[bx * block], tile)  # the last tile runs past the end: zeros
            else:
                T.annotate_safe_value({A: pad})
                for i in T.Parallel(block):
                    tile[i] = A[offset[0] + bx * block + i]
            for i in T.Parallel(block):
                wide[bx * block + i] = T.Cast("float32", tile[i])
                codes[bx * block + i] = tile[i]
                direct[bx * block + i] = A[offset[0] + bx * block + i]

    return guarded_reads


@pytest.mark.parametrize("kind", [*TARGETS, "interpreter"])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mode", ["copy", "parallel"])
def test_guarded_float8_reads_keep_their_codes(kind: str, fmt: str, mode: str) -> None:
    """Float8 loads the compiler guards (a partial tile's ``T.copy``, a ``T.Parallel``
    load at a run-time offset) read the exact codes inside and the safe value outside
    (zero, or the ``T.annotate_safe_value``):
    the guard's select of fp8 values was widened to float32 by TVM and the build
    stopped ("Reinterpret requires size match T.uint8 vs T.float32")."""
    m, block, offset, pad = 20, 16, 3, -2.5
    kernel = compile_for(_guarded_float8_reads(m, block, fmt, mode, pad), kind, out_idx=[2, 3, 4])
    # NaN (each format's canonical code: the interpreter keeps no other NaN payload),
    # -0.0, subnormals, the largest values (e5m2: infinity), one, ordinary codes.
    nan = 0x7F if fmt == "float8_e4m3fn" else 0x7E
    codes = np.array([nan, 0x80, 0x01, 0x7C, 0xFC, 0x00, 0x81, 0x38, *range(40, 52)])
    a = codes.astype(np.uint8).view(getattr(ml_dtypes, fmt))
    wide, tile_codes, direct = kernel(a, np.array([offset], np.int32))
    safe = np.float32(pad if mode == "parallel" else 0.0).astype(a.dtype)
    shifted = np.concatenate([a[offset:], np.full(32 - m + offset, safe)])
    expected_tile = np.concatenate([a, np.full(32 - m, safe)]) if mode == "copy" else shifted
    _assert_same_float32(wide, expected_tile.astype(np.float32))
    np.testing.assert_array_equal(
        np.asarray(tile_codes).view(np.uint8), expected_tile.view(np.uint8)
    )
    np.testing.assert_array_equal(np.asarray(direct).view(np.uint8), shifted.view(np.uint8))
