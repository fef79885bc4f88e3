"""Who runs what on GPU targets, as TileLang defines it, checked under the CPU emulation.

* A scalar ``T.atomic_add/max/min`` (one element, a scalar value) outside a
  ``T.Parallel`` nest runs on every thread of the block, whether its operands
  differ per thread or not; a tile atomic updates each element once.
* A ``T.Parallel`` nest over shared or global tiles (and a ``T.copy``/``T.fill``
  of such tiles) under a thread-dependent ``if`` is dealt to the threads the
  condition selects, so every iteration runs once; what cannot be dealt that way
  is a `GpuLoweringError`, never dropped iterations.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T
from tl_passes.gpu.errors import GpuLoweringError

THREADS = 64
BLOCKS = 3

needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def per_thread_atomic(kind: str) -> Any:
    """Each thread folds its own value into out[bx] and into a shared cell."""
    update = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min}[kind]

    @T.prim_func
    def main(
        A: T.Tensor((BLOCKS, THREADS), "float32"),
        Out: T.Tensor((BLOCKS,), "float32"),
        Cell: T.Tensor((BLOCKS,), "float32"),
    ):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            cell = T.alloc_shared((1,), "float32")
            if tx == 0:
                cell[0] = A[bx, 0]
            T.sync_threads()
            update(Out[bx], A[bx, tx])
            update(cell[0], A[bx, tx])
            T.sync_threads()
            if tx == 0:
                Cell[bx] = cell[0]

    return main


def uniform_atomic() -> Any:
    """A scalar atomic whose operands are the same on every thread (no thread index
    anywhere): TileLang runs it on every thread, so it counts the block's threads."""

    @T.prim_func
    def main(Count: T.Tensor((BLOCKS,), "int32"), Scale: T.Tensor((1,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            T.atomic_add(Count[bx], 1)
            T.atomic_add(Scale[0], 0.5)

    return main


def tile_atomic() -> Any:
    """A tile atomic outside T.Parallel: each element updated once per block."""

    @T.prim_func
    def main(A: T.Tensor((BLOCKS, 96), "float32"), Out: T.Tensor((96,), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tile = T.alloc_shared((96,), "float32")
            T.copy(A[bx, 0], tile)
            T.atomic_add(Out[0], tile)

    return main


@needs_gxx
@pytest.mark.parametrize("kind", ["add", "max", "min"])
def test_a_per_thread_scalar_atomic_runs_on_every_thread(kind: str) -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(-8, 9, (BLOCKS, THREADS)).astype(np.float32)
    start = np.full(BLOCKS, 0.5, np.float32)
    arrays = {"A": a, "Out": start.copy(), "Cell": np.zeros(BLOCKS, np.float32)}
    emu.emulate(per_thread_atomic(kind), arrays)
    fold = {"add": np.sum, "max": np.max, "min": np.min}[kind]
    combine = {"add": np.add, "max": np.maximum, "min": np.minimum}[kind]
    np.testing.assert_array_equal(arrays["Out"], combine(start, fold(a, axis=1)))
    cell_start = a[:, 0]
    np.testing.assert_array_equal(arrays["Cell"], combine(cell_start, fold(a, axis=1)))


@needs_gxx
def test_a_uniform_scalar_atomic_runs_once_per_thread() -> None:
    arrays = {"Count": np.zeros(BLOCKS, np.int32), "Scale": np.zeros(1, np.float32)}
    emu.emulate(uniform_atomic(), arrays)
    np.testing.assert_array_equal(arrays["Count"], np.full(BLOCKS, THREADS, np.int32))
    np.testing.assert_array_equal(arrays["Scale"], [0.5 * THREADS * BLOCKS])


def test_a_scalar_atomic_has_no_thread_zero_guard() -> None:
    text = emu.lower_for_cuda(uniform_atomic()).files["main.cu"]
    kernel = text.split('extern "C" __global__')[-1]
    assert "atomicAdd" in kernel
    assert "threadIdx.x) == 0" not in kernel


@needs_gxx
def test_a_tile_atomic_updates_each_element_once_per_block() -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((BLOCKS, 96)).astype(np.float32)
    arrays = {"A": a, "Out": np.zeros(96, np.float32)}
    emu.emulate(tile_atomic(), arrays)
    np.testing.assert_allclose(arrays["Out"], a.sum(axis=0), rtol=1e-5, atol=1e-5)


def parallel_under_thread_if(low: int, high: int, else_scale: float | None) -> Any:
    """``if low <= tx < high``: a T.Parallel into shared memory (then branch) and,
    with ``else_scale``, a second one over global memory in the else branch."""

    @T.prim_func
    def main(
        A: T.Tensor((16, 24), "float32"),
        B: T.Tensor((16, 24), "float32"),
        C: T.Tensor((16, 24), "float32"),
    ):
        with T.Kernel(1, threads=THREADS) as _bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((16, 24), "float32")
            if tx >= low and tx < high:
                for i, j in T.Parallel(16, 24):
                    S[i, j] = A[i, j] * 2.0
            else:
                if else_scale is not None:
                    for i, j in T.Parallel(16, 24):
                        C[i, j] = A[i, j] * else_scale
            T.copy(S, B)

    return main


@needs_gxx
@pytest.mark.parametrize(
    ("low", "high", "else_scale"),
    [(0, 16, None), (8, 40, None), (0, 63, -1.0), (0, THREADS, None), (32, THREADS, 5.0)],
)
def test_a_parallel_nest_under_a_thread_condition_runs_every_iteration(
    low: int, high: int, else_scale: float | None
) -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 24)).astype(np.float32)
    arrays = {"A": a, "B": np.zeros_like(a), "C": np.zeros_like(a)}
    emu.emulate(parallel_under_thread_if(low, high, else_scale), arrays)
    np.testing.assert_array_equal(arrays["B"], a * 2.0)
    expected_c = a * else_scale if else_scale is not None else np.zeros_like(a)
    np.testing.assert_array_equal(arrays["C"], expected_c)


def copy_and_fill_under_thread_if() -> Any:
    """T.fill and T.copy of shared/global tiles under ``if tx < 24`` (64 threads)."""

    @T.prim_func
    def main(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=THREADS) as _bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((32, 32), "float32")
            if tx < 24:
                T.fill(S, 1.0)
            if tx < 24:
                T.copy(A[0:16, 0:32], S[0:16, 0:32])
            T.copy(S, B)

    return main


@needs_gxx
def test_copy_and_fill_under_a_thread_condition_cover_their_tiles() -> None:
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    arrays = {"A": a, "B": np.zeros_like(a)}
    emu.emulate(copy_and_fill_under_thread_if(), arrays)
    expected = np.ones_like(a)
    expected[:16] = a[:16]
    np.testing.assert_array_equal(arrays["B"], expected)


def strided_condition() -> Any:
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=THREADS) as _bx:
            tx = T.get_thread_binding(0)
            if tx % 2 == 0:
                for i in T.Parallel(64):
                    B[i] = A[i]

    return main


def runtime_condition() -> Any:
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(1, threads=THREADS) as _bx:
            tx = T.get_thread_binding(0)
            if tx < n:
                for i in T.Parallel(64):
                    B[i] = A[i]

    return main


def fragment_under_thread_if() -> Any:
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=THREADS) as _bx:
            tx = T.get_thread_binding(0)
            F = T.alloc_fragment((64, 64), "float32")
            T.copy(A, F)
            if tx < 32:
                for i, j in T.Parallel(64, 64):
                    F[i, j] = F[i, j] * 2.0
            T.copy(F, B)

    return main


def reduce_under_thread_if() -> Any:
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=THREADS) as _bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((64, 64), "float32")
            R = T.alloc_shared((64,), "float32")
            T.copy(A, S)
            if tx < 32:
                T.reduce_sum(S, R, dim=1)
            T.copy(R, B)

    return main


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (strided_condition, "not one contiguous run"),
        (lambda: parallel_under_thread_if(8, 40, 3.0), r"T\.Parallel\(16, 24\).*contiguous"),
        (runtime_condition, "not known at compile time"),
        (fragment_under_thread_if, "partitioned fragment F"),
        (reduce_under_thread_if, r"T\.reduce under a thread-dependent branch"),
    ],
)
def test_work_that_cannot_be_dealt_to_the_selected_threads_is_refused(
    build: Any, message: str
) -> None:
    with pytest.raises(GpuLoweringError, match=message):
        emu.lower_for_cuda(build())
