"""Thread-indexed code mixed with tile ops and barriers, and consecutive T.Kernel launches,
run on c and llvm against numpy (the threads of a block become loops split at barriers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context, lower_to_sources
from tl_codegen_cpu.passes import CpuLowerLaunchPass
from tl_ir.errors import UnsupportedError
from tl_ir.language import gpu as G
from tl_passes import PassContext

TARGETS = ("c", "llvm")
N = 8  # threads per block in the small kernels


def _run(func: Any, target: str, tmp_path: Path, *arrays: np.ndarray, out_idx: Any = None) -> Any:
    context = create_backend_context(target)
    kernel = tl_runtime.load(build_artifact(context, func, tmp_path / target, out_idx=out_idx))
    return kernel(*arrays)


def rotate_through_shared(explicit_barrier: bool) -> Any:
    """Each thread publishes A[i] in shared memory and reads its neighbour's value."""

    @T.prim_func
    def main(A: T.Tensor((4 * N,), "float32"), B: T.Tensor((4 * N,), "float32")):
        with T.Kernel(4, threads=N) as bx:
            tx = T.get_thread_binding(0)
            tile = T.alloc_shared((N,), "float32")
            mine = T.alloc_local((1,), "float32")
            mine[0] = A[bx * N + tx] * T.float32(10)
            tile[tx] = A[bx * N + tx]
            if explicit_barrier:
                G.sync_threads()
            B[bx * N + tx] = tile[(tx + 1) % N] + mine[0]

    return main


def _rotated(a: np.ndarray) -> np.ndarray:
    blocks = a.reshape(4, N)
    return (np.roll(blocks, -1, axis=1) + 10 * blocks).reshape(-1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("explicit_barrier", [True, False])
def test_a_thread_reads_what_its_neighbour_wrote_before_the_barrier(
    target: str, explicit_barrier: bool, tmp_path: Path
) -> None:
    # Thread tx reads tile[tx + 1], written by the next thread: with the threads as one
    # loop (no split) it would read it before it is written. Without T.sync_threads the
    # barrier is the one TileLang's thread-sync planning inserts (write then read of a
    # shared buffer by different threads). `mine` lives across the barrier.
    a = np.arange(4 * N, dtype=np.float32)
    b = _run(rotate_through_shared(explicit_barrier), target, tmp_path, a, out_idx=[1])
    np.testing.assert_array_equal(b, _rotated(a))


def tile_ops_between_thread_code() -> Any:
    """T.copy, T.Parallel, T.reduce_sum and T.atomic_add beside per-thread code."""

    @T.prim_func
    def main(
        A: T.Tensor((2, N), "float32"),
        B: T.Tensor((2, N), "float32"),
        Total: T.Tensor((1,), "float32"),
    ):
        with T.Kernel(2, threads=N) as bx:
            tx = T.get_thread_binding(0)
            row = T.alloc_shared((N,), "float32")
            squares = T.alloc_fragment((N,), "float32")
            sums = T.alloc_fragment((1,), "float32")
            scaled = T.alloc_local((1,), "float32")
            T.copy(A[bx, 0], row)  # the block's threads together
            scaled[0] = row[tx] * T.float32(2)  # per thread, kept across the reduce
            for i in T.Parallel(N):
                squares[i] = row[i] * row[i]
            T.reduce_sum(squares, sums, dim=0)
            B[bx, tx] = scaled[0] + sums[0]
            T.atomic_add(Total[0], row[tx])  # one atomic per thread

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_tile_ops_run_once_per_block_between_per_thread_code(target: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (2, N)).astype(np.float32)
    b = np.zeros((2, N), np.float32)
    total = np.zeros(1, np.float32)
    _run(tile_ops_between_thread_code(), target, tmp_path, a, b, total)
    np.testing.assert_allclose(b, 2 * a + (a * a).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(total, [a.sum()])


def masked_copy(limit: int) -> Any:
    """A tile op under ``if tx < limit``: TileLang spreads it over the threads below limit."""

    @T.prim_func
    def main(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16, 16), "float32")):
        with T.Kernel(2, threads=N) as bx:
            tx = T.get_thread_binding(0)
            tile = T.alloc_shared((8, 16), "float32")
            T.fill(tile, T.float32(-1))
            if tx < limit:
                T.copy(A[bx * 8, 0], tile)
            T.copy(tile, B[bx * 8, 0])

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_a_tile_op_under_a_thread_condition_runs_when_some_thread_takes_it(
    target: str, tmp_path: Path
) -> None:
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    np.testing.assert_array_equal(_run(masked_copy(3), target, tmp_path, a, out_idx=[1]), a)
    none_taken = _run(masked_copy(0), target, tmp_path / "none", a, out_idx=[1])
    np.testing.assert_array_equal(none_taken, np.full((16, 16), -1, np.float32))


def uniform_scalar_atomics(names_thread: bool) -> Any:
    """Scalar atomics whose operands are the same on every thread, outside T.Parallel:
    as in TileLang, each thread of the block runs its element atomic; the tile atomic
    beside them updates each element once per block."""

    @T.prim_func
    def main(
        A: T.Tensor((N,), "float32"),
        Count: T.Tensor((2,), "int32"),
        Peak: T.Tensor((1,), "float32"),
        Tile: T.Tensor((N,), "float32"),
        Seen: T.Tensor((N,), "float32"),
    ):
        with T.Kernel(2, threads=N) as bx:
            if names_thread:
                tx = T.get_thread_binding(0)
                Seen[tx] = A[tx]
            T.atomic_add(Count[bx], 1)
            T.atomic_max(Peak[0], A[bx])
            T.atomic_add(Tile[0], A)

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("names_thread", [True, False])
def test_a_uniform_scalar_atomic_runs_on_every_thread(
    target: str, names_thread: bool, tmp_path: Path
) -> None:
    a = np.arange(N, dtype=np.float32) - 3
    count = np.zeros(2, np.int32)
    peak = np.full(1, -100, np.float32)
    tile = np.zeros(N, np.float32)
    seen = np.zeros(N, np.float32)
    _run(uniform_scalar_atomics(names_thread), target, tmp_path, a, count, peak, tile, seen)
    np.testing.assert_array_equal(count, [N, N])
    np.testing.assert_array_equal(peak, [a[:2].max()])
    np.testing.assert_array_equal(tile, 2 * a)


def barrier_in_a_loop() -> Any:
    """A running sum over k of the neighbour's value, exchanged through shared memory."""

    @T.prim_func
    def main(A: T.Tensor((6, N), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=N):
            tx = T.get_thread_binding(0)
            slot = T.alloc_shared((N,), "float32")
            acc = T.alloc_var("float32", init=0)
            for k in T.serial(6):
                slot[tx] = A[k, tx] + acc
                G.sync_threads()
                acc = slot[(tx + 1) % N]
                G.sync_threads()
            B[tx] = acc

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_barriers_inside_a_loop_split_each_iteration(target: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, (6, N)).astype(np.float32)
    acc = np.zeros(N, np.float32)
    for k in range(6):
        acc = np.roll(a[k] + acc, -1)
    np.testing.assert_array_equal(_run(barrier_in_a_loop(), target, tmp_path, a, out_idx=[1]), acc)


def _lower(func: Any) -> Any:
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
    return CpuLowerLaunchPass().run(mod, PassContext(target=tvm.target.Target("c")))


def test_a_barrier_only_some_threads_reach_is_refused() -> None:
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=N):
            tx = T.get_thread_binding(0)
            if tx < 4:
                A[tx] = T.float32(1)
                G.sync_threads()

    with pytest.raises(UnsupportedError, match=r"T\.sync_threads under a condition"):
        _lower(main)


def test_a_tile_op_in_a_loop_with_thread_dependent_bounds_is_refused() -> None:
    @T.prim_func
    def main(A: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=N):
            tx = T.get_thread_binding(0)
            tile = T.alloc_shared((N, N), "float32")
            for _ in T.serial(tx):
                T.copy(A[0, 0], tile)

    with pytest.raises(UnsupportedError, match="loop whose bounds depend on the thread index"):
        _lower(main)


def test_values_kept_across_a_region_boundary_become_per_thread_arrays() -> None:
    text = _lower(rotate_through_shared(explicit_barrier=True)).script()
    # `mine` (one float per thread) gets a thread dimension; the thread loops are split.
    assert "mine = T.alloc_local((8, 1))" in text
    assert "mine[tx, 0] = " in text
    assert text.count("for tx in T.serial(8") == 2  # each nest annotated with its path


def scale_then_reverse(n: int, block: int) -> Any:
    """Two consecutive launches: the second reads what every block of the first wrote."""

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * T.float32(2)
        with T.Kernel(n // 4, threads=4) as bx:
            tx = T.get_thread_binding(0)
            A[bx * 4 + tx] = B[n - 1 - (bx * 4 + tx)] + T.float32(1)

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_consecutive_kernels_run_in_order_each_grid_in_parallel(
    target: str, tmp_path: Path
) -> None:
    n = 4096
    a = np.arange(n, dtype=np.float32)
    b = np.zeros(n, np.float32)
    _run(scale_then_reverse(n, 64), target, tmp_path, a, b)
    expected_b = 2 * np.arange(n, dtype=np.float32)
    np.testing.assert_array_equal(b, expected_b)
    np.testing.assert_array_equal(a, expected_b[::-1] + 1)


def test_each_launch_is_its_own_parallel_loop_in_the_c_source() -> None:
    sources = lower_to_sources(create_backend_context("c"), scale_then_reverse(4096, 64))
    assert sources.files["kernel.c"].count("#pragma omp parallel for") == 2


def thread_binding_loop() -> Any:
    """Half the threads, named by a T.thread_binding loop, reverse a row a T.copy loaded."""

    @T.prim_func
    def main(A: T.Tensor((2, N), "float32"), B: T.Tensor((2, N), "float32")):
        with T.Kernel(2, threads=N) as bx:
            row = T.alloc_shared((N,), "float32")
            T.copy(A[bx, 0], row)
            for t in T.thread_binding(N // 2, thread="threadIdx.x"):
                B[bx, t] = row[N - 1 - t]
                B[bx, t + N // 2] = row[N // 2 - 1 - t]

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_a_thread_binding_loop_is_the_thread_index(target: str, tmp_path: Path) -> None:
    a = np.arange(2 * N, dtype=np.float32).reshape(2, N)
    b = _run(thread_binding_loop(), target, tmp_path, a, out_idx=[1])
    np.testing.assert_array_equal(b, a[:, ::-1])


def test_a_thread_binding_loop_on_a_thread_index_not_launched_is_refused() -> None:
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=N):
            for t in T.thread_binding(N, thread="threadIdx.y"):
                A[t] = T.float32(1)

    with pytest.raises(UnsupportedError, match=r"threadIdx\.y"):
        _lower(main)
