"""``T.gemm`` on the paths TileLang programs take: half operands, transposes, K slices.

Each kernel is compiled for ``c`` and ``llvm`` and compared with numpy; the lowered
IR is checked for the fp32 widening of half operands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context, lower_to_sources


def staged_gemm(
    M: int,
    N: int,
    K: int,
    block: tuple[int, int, int],
    dtype: str,
    trans_a: bool,
    trans_b: bool,
    out_dtype: str = "float32",
) -> Any:
    """TileLang's GEMM: tiles staged through shared memory, fp32 accumulator."""
    bm, bn, bk = block
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (bk, bm) if trans_a else (bm, bk)
    b_tile = (bn, bk) if trans_b else (bk, bn)

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), out_dtype)
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_shared = T.alloc_shared(a_tile, dtype)
            B_shared = T.alloc_shared(b_tile, dtype)
            C_local = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                if trans_a:
                    T.copy(A[ko * bk, by * bm], A_shared)
                else:
                    T.copy(A[by * bm, ko * bk], A_shared)
                if trans_b:
                    T.copy(B[bx * bn, ko * bk], B_shared)
                else:
                    T.copy(B[ko * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local, trans_a, trans_b)
            T.copy(C_local, C[by * bm, bx * bn])

    return main


def split_k_gemm(M: int, N: int, K: int, block: tuple[int, int, int], split_k: int) -> Any:
    """TileLang's split-k example: each block multiplies one K slice, atomics add them."""
    bm, bn, bk = block
    slice_k = K // split_k

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), split_k, threads=128) as (bx, by, bz):
            A_shared = T.alloc_shared((bm, bk), "float16")
            B_shared = T.alloc_shared((bk, bn), "float16")
            C_shared = T.alloc_shared((bm, bn), "float32")
            C_local = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(slice_k, bk), num_stages=0):
                T.copy(A[by * bm, bz * slice_k + ko * bk], A_shared)
                T.copy(B[bz * slice_k + ko * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C_shared)
            for i, j in T.Parallel(bm, bn):
                T.atomic_add(C[by * bm + i, bx * bn + j], C_shared[i, j])

    return main


def _as_kernel_array(x: np.ndarray, dtype: str) -> Any:
    """``x`` (fp32) in ``dtype``: numpy for fp16; a TVM tensor for bfloat16 (numpy has no
    DLPack bfloat16), holding the upper half of each fp32 (exact for these values)."""
    if dtype != "bfloat16":
        return x.astype(dtype)
    tensor = tvm.runtime.empty(x.shape, "bfloat16")
    tensor.copyfrom((np.ascontiguousarray(x).view(np.uint32) >> 16).astype(np.uint16))
    return tensor


def _run(func: Any, target: str, tmp_path: Path, *arrays: np.ndarray, out_idx: Any = None) -> Any:
    context = create_backend_context(target)
    kernel = tl_runtime.load(build_artifact(context, func, tmp_path / target, out_idx=out_idx))
    return kernel(*arrays)


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize(
    ("dtype", "trans_a", "trans_b"),
    [
        ("float16", False, False),
        ("float16", True, False),
        ("float16", False, True),
        ("float16", True, True),
        ("bfloat16", False, False),
        ("bfloat16", False, True),
    ],
)
def test_half_gemm_matches_numpy(
    target: str, dtype: str, trans_a: bool, trans_b: bool, tmp_path: Path
) -> None:
    M, N, K = 40, 72, 48  # partial tiles in every dim
    func = staged_gemm(M, N, K, (32, 32, 16), dtype, trans_a, trans_b)
    rng = np.random.default_rng(1)
    # Small integers / 4: exact in fp16 and bf16, every product and sum exact in fp32.
    a = (rng.integers(-4, 5, size=(K, M) if trans_a else (M, K)) / 4).astype(np.float32)
    b = (rng.integers(-4, 5, size=(N, K) if trans_b else (K, N)) / 4).astype(np.float32)
    c = _run(
        func, target, tmp_path, _as_kernel_array(a, dtype), _as_kernel_array(b, dtype), out_idx=[2]
    )
    np.testing.assert_array_equal(np.asarray(c), (a.T if trans_a else a) @ (b.T if trans_b else b))


def test_half_operands_are_widened_once_per_gemm() -> None:
    source = lower_to_sources(
        create_backend_context("c"), staged_gemm(64, 64, 64, (32, 32, 16), "float16", True, True)
    ).files["kernel.c"]
    assert "gemm_a_fp32" in source and "gemm_b_fp32" in source
    # The fp32 vector-extension kernel runs on the widened tiles.
    assert "tl_gemm_f32x" in source


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_split_k_gemm_with_atomic_accumulation_matches_numpy(target: str, tmp_path: Path) -> None:
    M, N, K = 48, 40, 64
    func = split_k_gemm(M, N, K, (32, 32, 16), split_k=2)
    rng = np.random.default_rng(2)
    a = (rng.integers(-4, 5, size=(M, K)) / 4).astype(np.float16)
    b = (rng.integers(-4, 5, size=(K, N)) / 4).astype(np.float16)
    c = np.full((M, N), 1.0, np.float32)
    _run(func, target, tmp_path, a, b, c)
    np.testing.assert_array_equal(c, 1.0 + a.astype(np.float32) @ b.astype(np.float32))
