"""Warp shuffles on c and llvm (`cpu-lower-warp-shuffles`): a butterfly reduction with
``T.shfl_xor``, a tree reduction with ``T.shfl_down``, an inclusive scan with
``T.shfl_up``, each against numpy; and the shuffles a CPU refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context
from tl_ir.errors import UnsupportedError

TARGETS = ("c", "llvm")
THREADS = 64  # two warps, so each group reads only its own lanes
BLOCKS = 2


def _run(func: Any, target: str, tmp_path: Path, a: np.ndarray) -> Any:
    context = create_backend_context(target)
    kernel = tl_runtime.load(build_artifact(context, func, tmp_path / target, out_idx=[1]))
    return kernel(a)


def butterfly_sum(width: int) -> Any:
    """Each thread ends with the sum of its ``width``-lane group (``T.shfl_xor``)."""

    @T.prim_func
    def main(A: T.Tensor((BLOCKS, THREADS), "float32"), B: T.Tensor((BLOCKS, THREADS), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            value = T.alloc_var("float32")
            value = A[bx, tx]
            offset = width // 2
            while offset >= 1:
                value = value + T.shfl_xor(value, offset, width)
                offset //= 2
            B[bx, tx] = value

    return main


@T.prim_func
def down_max(A: T.Tensor((BLOCKS, THREADS), "float32"), B: T.Tensor((BLOCKS, THREADS), "float32")):
    with T.Kernel(BLOCKS, threads=THREADS) as bx:
        tx = T.get_thread_binding(0)
        value = T.alloc_var("float32")
        value = A[bx, tx]
        for i in T.serial(5):
            value = T.max(value, T.shfl_down(value, 16 >> i))
        B[bx, tx] = value


@T.prim_func
def up_scan(A: T.Tensor((BLOCKS, THREADS), "int32"), B: T.Tensor((BLOCKS, THREADS), "int32")):
    with T.Kernel(BLOCKS, threads=THREADS) as bx:
        tx = T.get_thread_binding(0)
        value = T.alloc_var("int32")
        value = A[bx, tx]
        for i in T.serial(5):
            neighbour = T.shfl_up(value, 1 << i)
            if T.get_lane_idx() >= (1 << i):
                value = value + neighbour
        B[bx, tx] = value


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("width", [32, 8])
def test_a_butterfly_of_shfl_xor_sums_each_group(target: str, width: int, tmp_path: Path) -> None:
    a = np.random.default_rng(0).standard_normal((BLOCKS, THREADS)).astype(np.float32)
    b = _run(butterfly_sum(width), target, tmp_path, a)
    groups = a.reshape(BLOCKS, THREADS // width, width).sum(axis=2, keepdims=True)
    expected = np.broadcast_to(groups, (BLOCKS, THREADS // width, width)).reshape(a.shape)
    np.testing.assert_allclose(b, expected, rtol=1e-5, atol=1e-5)


def _down_reference(a: np.ndarray) -> np.ndarray:
    # Lanes past the warp's end keep their own value, as PTX's shfl.down does.
    value = a.reshape(BLOCKS, THREADS // 32, 32).copy()
    for i in range(5):
        delta = 16 >> i
        shifted = value.copy()
        shifted[..., : 32 - delta] = value[..., delta:]
        value = np.maximum(value, shifted)
    return value.reshape(a.shape)


@pytest.mark.parametrize("target", TARGETS)
def test_shfl_down_reduces_into_lane_zero_and_keeps_own_values_past_the_end(
    target: str, tmp_path: Path
) -> None:
    a = np.random.default_rng(1).standard_normal((BLOCKS, THREADS)).astype(np.float32)
    b = _run(down_max, target, tmp_path, a)
    np.testing.assert_array_equal(b, _down_reference(a))
    np.testing.assert_array_equal(b[:, ::32], a.reshape(BLOCKS, 2, 32).max(axis=2))


@pytest.mark.parametrize("target", TARGETS)
def test_shfl_up_scans_each_warp_inclusively(target: str, tmp_path: Path) -> None:
    a = np.random.default_rng(2).integers(-50, 50, size=(BLOCKS, THREADS), dtype=np.int32)
    b = _run(up_scan, target, tmp_path, a)
    expected = np.cumsum(a.reshape(BLOCKS, 2, 32), axis=2).reshape(a.shape)
    np.testing.assert_array_equal(b, expected)


def test_a_block_that_is_not_whole_groups_is_refused(tmp_path: Path) -> None:
    @T.prim_func
    def main(A: T.Tensor((48,), "float32"), B: T.Tensor((48,), "float32")):
        with T.Kernel(1, threads=48):
            tx = T.get_thread_binding(0)
            B[tx] = T.shfl_xor(A[tx], 1)

    with pytest.raises(UnsupportedError, match=r"whole number of groups.*got 48 threads"):
        _run(main, "c", tmp_path, np.zeros(48, np.float32))


def block_sum(first_lanes: int) -> Any:
    """Each warp sums its lanes, then the first ``first_lanes`` threads (the first warp
    when 32) sum the warps' partials: a block reduction as CUDA kernels write it."""

    @T.prim_func
    def main(A: T.Tensor((BLOCKS, THREADS), "float32"), B: T.Tensor((BLOCKS,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            partials = T.alloc_shared([THREADS // 32], "float32")
            value = T.alloc_var("float32")
            value = T.warp_reduce_sum(A[bx, tx])
            if T.get_lane_idx() == 0:
                partials[T.get_warp_idx()] = value
            T.sync_threads()
            if tx < first_lanes:
                value = T.if_then_else(tx < THREADS // 32, partials[tx % (THREADS // 32)], 0.0)
                value = T.warp_reduce_sum(value)
                if tx == 0:
                    B[bx] = value

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_the_first_warp_reduces_the_partials_under_a_thread_condition(
    target: str, tmp_path: Path
) -> None:
    a = np.random.default_rng(3).standard_normal((BLOCKS, THREADS)).astype(np.float32)
    b = _run(block_sum(32), target, tmp_path, a)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_a_condition_that_splits_a_warp_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match=r"reached by part of a 32-lane group"):
        _run(block_sum(16), "c", tmp_path, np.zeros((BLOCKS, THREADS), np.float32))


def hadamard_rounds(mask: int) -> Any:
    """The warp stage of TileLang's Hadamard example: butterflies through a direct
    ``T.tvm_warp_shuffle`` inside a loop over each thread's elements."""
    elements = 2

    @T.prim_func
    def main(
        A: T.Tensor((THREADS * elements,), "float32"), B: T.Tensor((THREADS * elements,), "float32")
    ):
        with T.Kernel(1, threads=THREADS):
            tx = T.get_thread_binding(0)
            local = T.alloc_local((elements,), "float32")
            other = T.alloc_local((elements,), "float32")
            for j in T.serial(elements):
                local[j] = A[tx * elements + j]
            for i in T.serial(5):
                sign = (tx >> i) & 1
                for j in T.serial(elements):
                    other[j] = T.tvm_warp_shuffle(mask, local[j], (tx ^ (1 << i)) % 32, 32, 32)
                    local[j] = T.if_then_else(sign == 0, local[j] + other[j], other[j] - local[j])
            for j in T.serial(elements):
                B[tx * elements + j] = local[j]

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_a_direct_tvm_warp_shuffle_runs_the_hadamard_butterflies(
    target: str, tmp_path: Path
) -> None:
    a = np.random.default_rng(4).standard_normal(THREADS * 2).astype(np.float32)
    b = _run(hadamard_rounds(0xFFFFFFFF), target, tmp_path, a)
    # Lane l of a warp ends with sum_m (-1)^popcount(l & m) a[m] per element slot.
    lanes = np.arange(32)
    signs = np.where(np.bitwise_count(lanes[:, None] & lanes[None, :]) % 2 == 1, -1.0, 1.0)
    warps = a.reshape(THREADS // 32, 32, 2).astype(np.float64)
    expected = np.einsum("lm,wme->wle", signs, warps).reshape(-1)
    np.testing.assert_allclose(b, expected, rtol=1e-5, atol=1e-4)


def test_a_direct_shuffle_with_a_partial_mask_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match=r"not a constant full mask.*pass 0xFFFFFFFF"):
        _run(hadamard_rounds(0xFFFF), "c", tmp_path, np.zeros(THREADS * 2, np.float32))
