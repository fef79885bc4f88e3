"""Reads and writes through a view of a tile are reads and writes of the tile.

A view (``T.reshape``, ``T.view``, ``T.Tensor(shape, dtype, B.data)``) is a buffer over
another's memory. Each test below was a silent wrong answer on the CPU targets when a
pass took a view for another buffer:

- `cpu-forward-copies` dropped a ``T.copy`` into a tile as dead when the next
  ``T.Parallel`` nest rewrote the whole tile while reading it through a view
  (`lowering/dead_copies.py`);
- `cpu-interchange-reductions` reordered, and `cpu-lower-scalar-gemms` turned into a
  GEMM, a serial nest updating a tile that its value also reads through a view;
- on ``llvm`` TVM's storage planning gave a tile's memory to a later tile while a
  view still read it (`cpu-localize-tiles` now makes a tile and its views one array).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T

TARGETS = ["c", "llvm"]
N = 4


def _copy_then_rewrite_through_reshape() -> Any:
    @T.prim_func
    def main(A: T.Tensor((4, 4), "float32"), Out: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((4, 4), "float32")
            V = T.reshape(S, (16,))
            T.copy(A, S)
            for i, j in T.Parallel(4, 4):
                S[i, j] = V[i * 4 + j] * 2 + 1
            T.copy(S, Out)

    return main


def _copy_then_rewrite_through_tensor_view() -> Any:
    @T.prim_func
    def main(A: T.Tensor((4, 4), "float32"), Out: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_fragment((4, 4), "float32")
            V = T.Tensor((2, 8), "float32", S.data)
            T.copy(A, S)
            for i, j in T.Parallel(4, 4):
                S[i, j] = V[i // 2, (i % 2) * 4 + j] + 10
            T.copy(S, Out)

    return main


def _transpose_through_reshape() -> Any:
    @T.prim_func
    def main(A: T.Tensor((4, 4), "float32"), Out: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((4, 4), "float32")
            S2 = T.alloc_shared((4, 4), "float32")
            V = T.reshape(S, (16,))
            T.copy(A, S)
            for i, j in T.Parallel(4, 4):
                S2[i, j] = V[j * 4 + i]
            T.copy(S2, Out)

    return main


def _transpose_through_bitcast_view() -> Any:
    @T.prim_func
    def main(A: T.Tensor((4, 4), "float32"), Out: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((4, 4), "float32")
            S2 = T.alloc_shared((4, 4), "float32")
            V = T.view(S, (16,), "int32")
            T.copy(A, S)
            for i, j in T.Parallel(4, 4):
                S2[i, j] = T.Cast("float32", V[j * 4 + i] % 1000)
            T.copy(S2, Out)

    return main


def _reduction_reading_transpose_through_view() -> Any:
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), Out: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=1):
            C = T.alloc_shared((N, N), "float32")
            Cv = T.reshape(C, (N * N,))
            T.fill(C, 1)
            for i, j, k in T.grid(N, N, N):
                C[i, j] = C[i, j] + Cv[j * N + i] * A[k]
            T.copy(C, Out)

    return main


def _gemm_reading_accumulator_through_view() -> Any:
    @T.prim_func
    def main(B: T.Tensor((N, N), "float32"), Out: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=1):
            C = T.alloc_shared((N, N), "float32")
            Av = T.Tensor((N, N), "float32", C.data)
            T.fill(C, 1)
            for i, j, k in T.grid(N, N, N):
                C[i, j] = C[i, j] + Av[i, k] * B[k, j]
            T.copy(C, Out)

    return main


def _run(func: Any, target: str, source: np.ndarray) -> np.ndarray:
    kernel = tl_jit.compile(func, target=target)
    out = np.zeros((4, 4), np.float32)
    kernel(source, out)
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_copy_read_through_reshape_by_the_overwriting_nest_is_kept(target: str) -> None:
    source = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = _run(_copy_then_rewrite_through_reshape(), target, source)
    np.testing.assert_array_equal(out, source * 2 + 1)


@pytest.mark.parametrize("target", TARGETS)
def test_copy_read_through_tensor_view_by_the_overwriting_nest_is_kept(target: str) -> None:
    source = np.arange(16, dtype=np.float32).reshape(4, 4) / 4
    out = _run(_copy_then_rewrite_through_tensor_view(), target, source)
    np.testing.assert_array_equal(out, source + 10)


@pytest.mark.parametrize("target", TARGETS)
def test_tile_read_through_reshape_keeps_its_memory(target: str) -> None:
    source = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = _run(_transpose_through_reshape(), target, source)
    np.testing.assert_array_equal(out, source.T)


@pytest.mark.parametrize("target", TARGETS)
def test_tile_read_through_bitcast_view_keeps_its_memory(target: str) -> None:
    source = (np.arange(16, dtype=np.float32).reshape(4, 4) + 1) / 3
    out = _run(_transpose_through_bitcast_view(), target, source)
    expected = (source.view(np.int32).T.astype(np.int64) % 1000).astype(np.float32)
    np.testing.assert_array_equal(out, expected)


def _sequential(update: Any) -> np.ndarray:
    c = np.ones((N, N), np.float64)
    for i in range(N):
        for j in range(N):
            for k in range(N):
                c[i, j] = update(c, i, j, k)
    return c


@pytest.mark.parametrize("target", TARGETS)
def test_reduction_reading_the_stored_tile_through_a_view_keeps_its_order(target: str) -> None:
    a = np.array([0.5, -0.25, 0.125, 1.0], np.float32)
    out = _run(_reduction_reading_transpose_through_view(), target, a)
    expected = _sequential(lambda c, i, j, k: c[i, j] + c[j, i] * a[k])
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_gemm_reading_the_accumulator_through_a_view_stays_loops(target: str) -> None:
    b = np.arange(16, dtype=np.float32).reshape(4, 4) / 8
    out = _run(_gemm_reading_accumulator_through_view(), target, b)
    expected = _sequential(lambda c, i, j, k: c[i, j] + c[i, k] * b[k, j])
    np.testing.assert_allclose(out, expected, rtol=1e-6)
