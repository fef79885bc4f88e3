"""Scalar names assigned inside a ``T.vectorized`` loop (`cpu-inline-vector-loop-binds`).

``idx = tx * L + v`` then ``loc[v] = S[idx // 32, idx % 32]``: each scalar name is a
one-element local buffer allocated in the loop's body, which TVM's vectorizer kept as
one element for every lane, so on ``llvm`` every lane used the last lane's value (480
of 512 elements wrong; TileLang's fine-grained dequantize GEMM was wrong everywhere).
Checked against numpy on the compiled targets and the interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit.language as T
from integration_tests.interpreter_target import compile_for

TARGETS = ["llvm", "c", "interpreter"]
R, C, THREADS, L = 16, 32, 32, 16


def _split_index() -> Any:
    @T.prim_func
    def split_index(X: T.Tensor((R, C), "float32"), Y: T.Tensor((R, C), "float32")):
        with T.Kernel(1, threads=THREADS):
            S = T.alloc_shared((R, C), "float32")
            loc = T.alloc_local([L], "float32")
            tx = T.get_thread_binding()
            for i, j in T.Parallel(R, C):
                S[i, j] = X[i, j]
            for v in T.vectorized(L):
                idx = tx * L + v
                row = idx // C  # a scalar computed from another
                loc[v] = S[row, idx % C] * 2.0
            for v in T.serial(L):
                idx = tx * L + v
                Y[idx // C, idx % C] = loc[v]

    return split_index


def _scalars_of_every_kind() -> Any:
    @T.prim_func
    def scalars(X: T.Tensor((THREADS, L), "float32"), Y: T.Tensor((THREADS, L), "float32")):
        with T.Kernel(1, threads=THREADS):
            loc = T.alloc_local([L], "float32")
            tx = T.get_thread_binding()
            for v in T.vectorized(L):
                t = X[tx, v] * 2.0  # a float read from memory the loop does not write
                u = v + tx
                loc[v] = t + T.cast(u, "float32")
            for v in T.serial(L):
                Y[tx, v] = loc[v]

    return scalars


def _scalar_of_memory_the_loop_writes() -> Any:
    @T.prim_func
    def rewrites(X: T.Tensor((THREADS, L), "float32"), Y: T.Tensor((THREADS, L), "float32")):
        with T.Kernel(1, threads=THREADS):
            tx = T.get_thread_binding()
            for v in T.vectorized(L):
                old = X[tx, v]  # read before the loop writes X: must stay in order
                X[tx, v] = old + 1.0
                Y[tx, v] = old * 3.0 + X[tx, v]

    return rewrites


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_names_in_a_vectorized_loop_are_per_lane(target: str) -> None:
    x = np.arange(R * C, dtype=np.float32).reshape(R, C)
    y = np.zeros_like(x)
    compile_for(_split_index(), target)(x, y)
    np.testing.assert_array_equal(y, 2 * x)
    x = np.random.default_rng(0).standard_normal((THREADS, L)).astype(np.float32)
    y = np.zeros_like(x)
    compile_for(_scalars_of_every_kind(), target)(x, y)
    lanes = np.arange(L)[None, :] + np.arange(THREADS)[:, None]
    np.testing.assert_allclose(y, 2 * x + lanes, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_a_scalar_of_memory_the_loop_writes_keeps_its_order(target: str) -> None:
    x = np.random.default_rng(1).standard_normal((THREADS, L)).astype(np.float32)
    before = x.copy()
    y = np.zeros_like(x)
    compile_for(_scalar_of_memory_the_loop_writes(), target)(x, y)
    np.testing.assert_allclose(x, before + 1, rtol=1e-6)
    np.testing.assert_allclose(y, before * 3 + before + 1, rtol=1e-5)


def _bool_mask(rows: int, width: int) -> Any:
    @T.prim_func
    def bool_mask(Idx: T.Tensor((width,), "int32"), Out: T.Tensor((rows, width), "float32")):
        with T.Kernel(1, threads=128):
            mask = T.alloc_fragment([width], "bool")
            acc = T.alloc_fragment([rows, width], "float32")
            for i in T.Parallel(width):
                mask[i] = Idx[i] <= 10
            for h, i in T.Parallel(rows, width):
                acc[h, i] = T.if_then_else(mask[i], 0, -T.infinity("float32"))
            T.copy(acc, Out)

    return bool_mask


@pytest.mark.parametrize("target", TARGETS)
def test_a_bool_fragment_read_in_a_vectorized_loop(target: str) -> None:
    """TileLang's sparse MLA kernels: a bool fragment filled by a comparison and read by
    ``T.if_then_else`` over a 2-D ``T.Parallel`` failed to build on llvm ("Check failed:
    a_ty.MatchesCode(kDLBool)"; `cpu-vector-bool-loads`)."""
    idx = np.arange(32, dtype=np.int32)
    out = np.zeros((16, 32), np.float32)
    compile_for(_bool_mask(16, 32), target)(idx, out)
    expected = np.where(idx <= 10, 0, -np.inf).astype(np.float32)
    np.testing.assert_array_equal(out, np.tile(expected, (16, 1)))
