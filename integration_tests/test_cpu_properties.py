"""Property tests: random small shapes and block sizes for copy, elementwise, reduce and gemm
kernels on targets c and llvm, compared with numpy."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tl_ir.language as T
import tl_runtime
from tl_backend_api import create_backend_context
from tl_backend_api.artifact import build_artifact

TARGETS = ("c", "llvm")
SETTINGS = settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
dims = st.integers(min_value=1, max_value=70)
blocks = st.sampled_from([1, 3, 8, 16, 32])

# Builds of this module, removed when the process exits.
_SCRATCH = tempfile.TemporaryDirectory(prefix="tl-cpu-prop-")


def _compile(func: Any, target: str, out_idx: list[int], adapter: str) -> Any:
    context = create_backend_context(target, execution_backend="tvm_ffi")
    directory = Path(tempfile.mkdtemp(dir=_SCRATCH.name)) / "artifact"
    build_artifact(context, func, directory, out_idx=out_idx)
    return tl_runtime.load(directory, adapter=adapter)


def copy_kernel(M: int, N: int, bm: int, bn: int) -> Any:
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=64) as (bx, by):
            tile = T.alloc_shared((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], tile)
            T.copy(tile, B[by * bm, bx * bn])

    return main


def elementwise_kernel(M: int, N: int, bm: int, bn: int) -> Any:
    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        B: T.Tensor((M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=64) as (bx, by):
            a = T.alloc_fragment((bm, bn), "float32")
            b = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], a)
            T.copy(B[by * bm, bx * bn], b)
            for i, j in T.Parallel(bm, bn):
                a[i, j] = a[i, j] * b[i, j] + T.float32(1.5)
            T.copy(a, C[by * bm, bx * bn])

    return main


def row_max_kernel(M: int, N: int, bm: int) -> Any:
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), out: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=64) as bx:
            tile = T.alloc_fragment((bm, N), "float32")
            part = T.alloc_fragment((bm,), "float32")
            T.copy(A[bx * bm, 0], tile)
            T.reduce_max(tile, part, dim=1)
            T.copy(part, out[bx * bm])

    return main


def gemm_kernel(M: int, N: int, K: int, bm: int, bn: int, bk: int, ta: bool, tb: bool) -> Any:
    a_shape = (K, M) if ta else (M, K)
    b_shape = (N, K) if tb else (K, N)
    a_tile = (bk, bm) if ta else (bm, bk)
    b_tile = (bn, bk) if tb else (bk, bn)

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, "float32"),
        B: T.Tensor(b_shape, "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared(a_tile, "float32")
            B_s = T.alloc_shared(b_tile, "float32")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                if ta:
                    T.copy(A[ko * bk, by * bm], A_s)
                else:
                    T.copy(A[by * bm, ko * bk], A_s)
                if tb:
                    T.copy(B[bx * bn, ko * bk], B_s)
                else:
                    T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l, transpose_A=ta, transpose_B=tb)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("target", TARGETS)
@SETTINGS
@given(M=dims, N=dims, bm=blocks, bn=blocks, adapter=st.sampled_from(["tvm_ffi", "cython"]))
def test_copy_round_trips_any_shape(
    target: str, M: int, N: int, bm: int, bn: int, adapter: str
) -> None:
    kernel = _compile(copy_kernel(M, N, bm, bn), target, [-1], adapter)
    a = np.random.default_rng(M * N).standard_normal((M, N)).astype("float32")
    np.testing.assert_array_equal(kernel(a), a)


@pytest.mark.parametrize("target", TARGETS)
@SETTINGS
@given(M=dims, N=dims, bm=blocks, bn=blocks)
def test_elementwise_matches_numpy(target: str, M: int, N: int, bm: int, bn: int) -> None:
    kernel = _compile(elementwise_kernel(M, N, bm, bn), target, [-1], "tvm_ffi")
    rng = np.random.default_rng(M + N)
    a, b = (rng.standard_normal((M, N)).astype("float32") for _ in range(2))
    np.testing.assert_allclose(kernel(a, b), a * b + 1.5, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@SETTINGS
@given(M=dims, N=dims, bm=blocks)
def test_row_reduce_matches_numpy(target: str, M: int, N: int, bm: int) -> None:
    kernel = _compile(row_max_kernel(M, N, bm), target, [-1], "tvm_ffi")
    a = np.random.default_rng(M).standard_normal((M, N)).astype("float32")
    np.testing.assert_allclose(kernel(a), a.max(axis=1), rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@SETTINGS
@given(
    M=st.integers(1, 40),
    N=st.integers(1, 40),
    K=st.integers(1, 40),
    bm=st.sampled_from([4, 16, 32]),
    bn=st.sampled_from([8, 16, 32]),
    bk=st.sampled_from([4, 8, 16]),
    ta=st.booleans(),
    tb=st.booleans(),
)
def test_gemm_matches_numpy(
    target: str, M: int, N: int, K: int, bm: int, bn: int, bk: int, ta: bool, tb: bool
) -> None:
    kernel = _compile(gemm_kernel(M, N, K, bm, bn, bk, ta, tb), target, [-1], "tvm_ffi")
    rng = np.random.default_rng(M * 7 + N)
    a = rng.standard_normal((K, M) if ta else (M, K)).astype("float32")
    b = rng.standard_normal((N, K) if tb else (K, N)).astype("float32")
    expected = (a.T if ta else a) @ (b.T if tb else b)
    np.testing.assert_allclose(kernel(a, b), expected, rtol=1e-4, atol=1e-4)


def persistent_gemm_kernel(M: int, N: int, K: int, bm: int, bn: int, workers: int) -> Any:
    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float32"),
        B: T.Tensor((K, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(workers, threads=64) as block_id:
            A_s = T.alloc_shared((bm, K), "float32")
            B_s = T.alloc_shared((K, bn), "float32")
            C_l = T.alloc_fragment((bm, bn), "float32")
            for bx, by in T.Persistent([T.ceildiv(M, bm), T.ceildiv(N, bn)], workers, block_id):
                T.clear(C_l)
                T.copy(A[bx * bm, 0], A_s)
                T.copy(B[0, by * bn], B_s)
                T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C[bx * bm, by * bn])

    return main


@SETTINGS
@given(M=dims, N=dims, bm=blocks, bn=blocks, workers=st.integers(1, 5))
def test_persistent_tile_loop_writes_every_tile_alike_on_c_and_llvm(
    M: int, N: int, bm: int, bn: int, workers: int
) -> None:
    """A ``T.Persistent`` loop visits every tile once on both CPU targets: the outputs
    start as NaN (so a tile never visited cannot pass by the allocator's leftovers), match
    numpy and agree bit for bit between ``c`` and ``llvm``. The inputs are small
    integers, so every product and sum is exact whether or not a target fuses
    multiply-adds: any difference is a tile computed wrongly or not at all."""
    K = 8
    func = persistent_gemm_kernel(M, N, K, bm, bn, workers)
    rng = np.random.default_rng(M * 97 + N)
    a = rng.integers(-8, 8, (M, K)).astype("float32")
    b = rng.integers(-8, 8, (K, N)).astype("float32")
    results = []
    for target in TARGETS:
        kernel = _compile(func, target, [], "tvm_ffi")
        c = np.full((M, N), np.nan, dtype="float32")
        kernel(a, b, c)
        np.testing.assert_array_equal(c, a @ b)
        results.append(c)
    assert results[0].tobytes() == results[1].tobytes()
