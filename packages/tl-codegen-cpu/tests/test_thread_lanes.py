"""Thread-indexed regions as SIMD lanes: per-thread reductions laned along their
contiguous loop (`thread_lanes`), threads in lock step (`thread_lockstep`), fallbacks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context, lower_to_sources
from tl_codegen_cpu.lowering.thread_lanes import THREAD_PATH_KEY
from tl_codegen_cpu.lowering.vector_isa import vector_isa_for_target
from tl_codegen_cpu.passes import CpuLowerLaunchPass
from tl_passes import PassContext

N, K = 64, 512


def split_k_gemv(rows: int, threads_k: int, chunk: int, dtype: str = "float32") -> Any:
    """C = B @ A: ``rows`` threads per block on rows, ``threads_k`` threads splitting each
    block of K, each thread summing ``chunk`` consecutive elements, then an atomic add of
    the threads' sums into a shared row accumulator."""
    block_k = threads_k * chunk

    @T.prim_func
    def main(A: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, rows), threads=(rows, threads_k)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            a_regs = T.alloc_local((chunk,), dtype)
            b_regs = T.alloc_local((chunk,), dtype)
            row_sum = T.alloc_shared((rows,), "float32")
            acc = T.alloc_local((1,), "float32")
            if tk == 0:
                row_sum[tn] = 0
            T.clear(acc)
            for bk in T.serial(K // block_k):
                for k in T.serial(chunk):
                    a_regs[k] = A[bk * block_k + tk * chunk + k]
                    b_regs[k] = B[bn * rows + tn, bk * block_k + tk * chunk + k]
                for k in T.serial(chunk):
                    acc[0] += a_regs[k].astype("float32") * b_regs[k].astype("float32")
            T.atomic_add(row_sum[tn], acc[0])
            C[bn * rows + tn] = row_sum[tn]

    return main


def row_per_thread_gemv(rows: int, block_k: int) -> Any:
    """C = B @ A with one thread per row, staging A and B's rows through shared memory."""

    @T.prim_func
    def main(
        A: T.Tensor((K,), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")
    ):
        with T.Kernel(T.ceildiv(N, rows), threads=rows) as bn:
            tn = T.get_thread_binding(0)
            a_tile = T.alloc_shared((block_k,), "float32")
            b_tile = T.alloc_shared((rows, block_k), "float32")
            acc = T.alloc_local((1,), "float32")
            T.clear(acc)
            for bk in T.serial(K // block_k):
                for k in T.serial(block_k):
                    a_tile[k] = A[bk * block_k + k]
                    b_tile[tn, k] = B[bn * rows + tn, bk * block_k + k]
                for k in T.serial(block_k):
                    acc[0] += a_tile[k] * b_tile[tn, k]
            C[bn * rows + tn] = acc[0]

    return main


def integer_even_sum(rows: int) -> Any:
    """Per-thread int32 sums of every other element: no float sum to lane, and no thread
    index whose accesses are contiguous (the fallback: threads as loops)."""

    @T.prim_func
    def main(B: T.Tensor((N, K), "int32"), C: T.Tensor((N,), "int32")):
        with T.Kernel(T.ceildiv(N, rows), threads=rows) as bn:
            tn = T.get_thread_binding(0)
            acc = T.alloc_local((1,), "int32")
            acc[0] = 0
            for k in T.serial(K // 2):
                acc[0] += B[bn * rows + tn, 2 * k]
            C[bn * rows + tn] = acc[0]

    return main


def _paths(func: Any, target: str = "c") -> list[str]:
    mod = tvm.IRModule({"main": func})
    lowered = CpuLowerLaunchPass().run(mod, PassContext(target=tvm.target.Target(target)))
    key = re.escape(THREAD_PATH_KEY)
    text = lowered.script()
    # On the nest's outer loop, or (the only thread loop became the lanes) an attribute.
    return re.findall(rf'"{key}": "([^"]*)"', text) + re.findall(rf'"{key}", "([^"]*)"', text)


def _run(func: Any, target: str, tmp_path: Path, *inputs: np.ndarray) -> np.ndarray:
    context = create_backend_context(target)
    artifact = build_artifact(context, func, tmp_path / target, out_idx=-1, dump_dir=None)
    return np.asarray(tl_runtime.load(artifact)(*inputs))


def _gemv_inputs(dtype: str = "float32") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(K).astype(dtype)
    b = rng.standard_normal((N, K)).astype(dtype)
    want = b.astype(np.float64) @ a.astype(np.float64)
    return a, b, want


def test_a_split_k_gemv_region_runs_its_threads_as_lanes() -> None:
    paths = _paths(split_k_gemv(rows=8, threads_k=8, chunk=8))
    laned = [p for p in paths if p.startswith("lanes:")]
    assert len(laned) == 1, paths
    # The K-splitting thread index is the lanes; each thread's sum is laned along k.
    assert "threads tk as 8 lanes" in laned[0]
    assert "sum into acc along k as 8 lanes across bk" in laned[0]
    assert "per-lane copies of" in laned[0]


def test_a_row_per_thread_gemv_sums_each_row_along_k() -> None:
    paths = _paths(row_per_thread_gemv(rows=16, block_k=64))
    # The staging copy is forwarded into the sum after the barrier (and dropped), the
    # loop over blocks of K moves inside the thread loop, and each thread keeps one
    # partial vector across all of K: one contiguous walk of its row.
    merged = [p for p in paths if "forwarded across the barrier" in p]
    assert len(merged) == 1, paths
    assert merged[0].startswith("lanes: staging of a_tile, b_tile forwarded"), merged
    assert "the loop over bk moved inside" in merged[0]
    # One fp32 vector register of lanes: 16 with AVX-512, 8 with AVX2.
    lanes = vector_isa_for_target(None).lanes("float32")
    assert f"sum into acc along k as {lanes} lanes across bk" in merged[0]
    # Several rows walked together (more memory streams in flight).
    assert re.search(r"; [24] threads interleaved$", merged[0]), merged[0]


def test_a_loop_writing_shared_memory_keeps_its_place(tmp_path: Path) -> None:
    """The sum after the forwarded staging also writes a shared array each block of K:
    the barriers between the iterations may order something, so the loop over blocks of
    K stays outside the thread loop (forwarded, not moved)."""
    rows, block_k = 16, 64

    @T.prim_func
    def main(
        A: T.Tensor((K,), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")
    ):
        with T.Kernel(T.ceildiv(N, rows), threads=rows) as bn:
            tn = T.get_thread_binding(0)
            a_tile = T.alloc_shared((block_k,), "float32")
            b_tile = T.alloc_shared((rows, block_k), "float32")
            partial = T.alloc_shared((rows,), "float32")
            acc = T.alloc_local((1,), "float32")
            T.clear(acc)
            for bk in T.serial(K // block_k):
                for k in T.serial(block_k):
                    a_tile[k] = A[bk * block_k + k]
                    b_tile[tn, k] = B[bn * rows + tn, bk * block_k + k]
                for k in T.serial(block_k):
                    acc[0] += a_tile[k] * b_tile[tn, k]
                partial[tn] = acc[0]
            C[bn * rows + tn] = partial[tn]

    paths = _paths(main)
    forwarded = [p for p in paths if "forwarded across the barrier" in p]
    assert forwarded, paths
    assert not any("moved inside" in p for p in paths), paths
    a, b, want = _gemv_inputs()
    np.testing.assert_allclose(_run(main, "c", tmp_path, a, b), want, rtol=1e-4, atol=1e-4)


def test_a_staging_copy_read_after_its_loop_is_kept(tmp_path: Path) -> None:
    """The staged B tile is read again after the loop: forwarded into the sum, but its
    copy stays (its last values are needed; A's is dropped), so the loop keeps its two
    regions in order."""
    rows, block_k = 16, 64

    @T.prim_func
    def main(
        A: T.Tensor((K,), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")
    ):
        with T.Kernel(T.ceildiv(N, rows), threads=rows) as bn:
            tn = T.get_thread_binding(0)
            a_tile = T.alloc_shared((block_k,), "float32")
            b_tile = T.alloc_shared((rows, block_k), "float32")
            acc = T.alloc_local((1,), "float32")
            T.clear(acc)
            for bk in T.serial(K // block_k):
                for k in T.serial(block_k):
                    a_tile[k] = A[bk * block_k + k]
                    b_tile[tn, k] = B[bn * rows + tn, bk * block_k + k]
                for k in T.serial(block_k):
                    acc[0] += a_tile[k] * b_tile[tn, k]
            C[bn * rows + tn] = acc[0] + b_tile[tn, 0]

    paths = _paths(main)
    assert any("staging of a_tile, b_tile forwarded across the barrier" in p for p in paths)
    assert not any("the loop over bk moved inside" in p for p in paths), paths
    a, b, want = _gemv_inputs()
    got = _run(main, "c", tmp_path, a, b)
    np.testing.assert_allclose(got, want + b[:, K - block_k], rtol=1e-4, atol=1e-4)


def test_the_llvm_ir_of_a_gemv_has_vector_loads_and_a_horizontal_reduction() -> None:
    ir = lower_to_sources(
        create_backend_context("llvm"), split_k_gemv(rows=8, threads_k=8, chunk=8)
    ).files["kernel.ll"]
    assert re.search(r"load <(8|16) x float>", ir), "no vector load of the GEMV's operands"
    # The fold: vector adds of halves (shuffles of the partial vector), down to a scalar.
    assert re.search(r"shufflevector <\d+ x float>", ir)
    assert re.search(r"fadd (fast )?<\d+ x float>", ir)


def test_the_c_source_of_a_gemv_is_one_contiguous_loop_per_block_of_k() -> None:
    source = lower_to_sources(
        create_backend_context("c"), split_k_gemv(rows=8, threads_k=8, chunk=8)
    ).files["kernel.c"]
    # Lanes x chunk fused into one walk of 64 consecutive elements of B's row, written as
    # register-wide pieces (so gcc keeps the per-lane sums in registers across bk).
    pieces = re.findall(r"for \(int32_t tk_k_c(\d+) = 0; tk_k_c\d+ < (\d+);", source)
    assert pieces, source
    width = int(pieces[0][1])
    assert width > 1 and all(int(w) == width for _, w in pieces), pieces
    assert len(pieces) * width == 64, pieces
    # The fold of each thread's 8 partial sums: one store of a tree of adds (lanes in
    # lock step: the loop over the threads vectorizes it, strided).
    fold = re.search(r"acc_ptr\[\w+\] = \(acc_ptr\[\w+\] \+ (.*);", source)
    assert fold is not None, source
    assert len(re.findall(r"acc_lanes1_lanes\w*_ptr\[", fold.group(1))) == 8, fold.group(0)


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize(
    "build",
    [
        lambda: split_k_gemv(rows=8, threads_k=8, chunk=8),
        lambda: split_k_gemv(rows=4, threads_k=32, chunk=4),
        lambda: split_k_gemv(rows=32, threads_k=32, chunk=1),
        lambda: row_per_thread_gemv(rows=16, block_k=64),
    ],
    ids=["chunk8", "chunk4", "one-per-thread", "row-per-thread"],
)
def test_laned_gemvs_agree_with_numpy(target: str, build: Any, tmp_path: Path) -> None:
    a, b, want = _gemv_inputs()
    got = _run(build(), target, tmp_path, a, b)
    # Reassociated float32 sums of 512 products: rounding of the sum, not more.
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_half_precision_gemv_agrees_with_numpy(tmp_path: Path) -> None:
    a, b, want = _gemv_inputs("float16")
    got = _run(split_k_gemv(rows=8, threads_k=8, chunk=8, dtype="float16"), "llvm", tmp_path, a, b)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=1e-2)


def test_an_integer_reduction_falls_back_to_scalar_threads(tmp_path: Path) -> None:
    func = integer_even_sum(rows=16)
    paths = _paths(func)
    assert any(p.startswith("scalar:") and "int32, not float32" in p for p in paths), paths
    assert not any(p.startswith("lanes:") for p in paths), paths
    assert not any("interleaved" in p for p in paths), paths  # no laned walk to jam
    b = np.arange(N * K, dtype=np.int32).reshape(N, K) % 7
    got = _run(func, "c", tmp_path, b)
    np.testing.assert_array_equal(got, b[:, ::2].sum(axis=1, dtype=np.int32))


def test_lock_step_is_refused_when_per_lane_copies_exceed_the_budget(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tl_codegen_cpu.lowering import thread_lockstep

    monkeypatch.setattr(thread_lockstep, "MAX_LANE_COPY_BYTES", 64)
    func = split_k_gemv(rows=8, threads_k=8, chunk=8)
    paths = _paths(func)
    assert not any("threads tk as" in p for p in paths), paths
    # Its per-thread sums are still laned, and the result is right.
    assert any("sum into acc along k" in p for p in paths), paths
    a, b, want = _gemv_inputs()
    np.testing.assert_allclose(_run(func, "c", tmp_path, a, b), want, rtol=1e-4, atol=1e-4)


def column_sums(threads: int) -> Any:
    """C[j] = sum_i B[i, j]: thread tx owns column tx of each block of columns, so the one
    thread index is the lanes (the nest's path is then an attribute, not a loop's)."""

    @T.prim_func
    def main(B: T.Tensor((K, N), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bn:
            tx = T.get_thread_binding(0)
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0
            for i in T.serial(K):
                acc[0] += B[i, bn * threads + tx]
            C[bn * threads + tx] = acc[0]

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_a_single_thread_index_becomes_the_lanes(target: str, tmp_path: Path) -> None:
    func = column_sums(threads=32)
    assert any(p.startswith("lanes: threads tx as 32 lanes") for p in _paths(func)), _paths(func)
    b = np.random.default_rng(1).standard_normal((K, N)).astype(np.float32)
    # Each column summed in its own order, as before: exact up to float32 rounding.
    np.testing.assert_allclose(_run(func, target, tmp_path, b), b.sum(axis=0), rtol=1e-4, atol=1e-4)


def allreduce_gemv(threads_k: int, reducer: str) -> Any:
    """TileLang's SIMT GEMV shape: ``threads_k`` threads split each row's K, their sums
    combined by ``tvm_thread_allreduce`` with a ``reducer`` ("sum" or "max": the row's
    largest per-thread partial sum)."""
    rows, micro = 4, 4
    block_k = threads_k * micro

    def combine(x: Any, y: Any) -> Any:
        return x + y if reducer == "sum" else T.max(x, y)

    identity = T.cast(0, "float32") if reducer == "sum" else T.cast(-3.0e38, "float32")

    @T.prim_func
    def main(
        A: T.Tensor((K,), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")
    ):
        with T.Kernel(T.ceildiv(N, rows), threads=(threads_k, rows)) as bx:
            a_regs = T.alloc_local((micro,), "float32")
            b_regs = T.alloc_local((micro,), "float32")
            acc = T.alloc_local((1,), "float32")
            reduced = T.alloc_local((1,), "float32")
            kr = T.get_thread_binding(0)
            ni = T.get_thread_binding(1)
            T.clear(acc)
            for ko in T.serial(K // block_k):
                for v in T.vectorized(micro):
                    a_regs[v] = A[ko * block_k + kr * micro + v]
                for v in T.vectorized(micro):
                    b_regs[v] = B[bx * rows + ni, ko * block_k + kr * micro + v]
                for ki in T.serial(micro):
                    acc[0] += a_regs[ki] * b_regs[ki]
            with T.attr(
                T.comm_reducer(combine, [identity]),
                "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle"),
            ):
                T.evaluate(
                    T.tvm_thread_allreduce(
                        T.uint32(1), acc[0], True, reduced[0], kr, dtype="handle"
                    )
                )
            if kr == 0:
                C[bx * rows + ni] = reduced[0]

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_a_thread_allreduce_sum_is_a_vector_sum(target: str, tmp_path: Path) -> None:
    func = allreduce_gemv(threads_k=32, reducer="sum")
    paths = _paths(func, target)
    assert "lanes: thread reduction over kr as a vector sum" in paths, paths
    a, b, want = _gemv_inputs()
    np.testing.assert_allclose(_run(func, target, tmp_path, a, b), want, rtol=1e-4, atol=1e-4)


def test_a_thread_allreduce_max_keeps_the_scalar_fold(tmp_path: Path) -> None:
    func = allreduce_gemv(threads_k=8, reducer="max")
    paths = _paths(func)
    assert "scalar: thread reduction over kr: the reducer is not a sum" in paths, paths
    a, b, _ = _gemv_inputs()
    # Each thread kr sums the elements k with (k // 4) % 8 == kr; the row's largest sum.
    parts = (b * a).reshape(N, K // 32, 8, 4).sum(axis=(1, 3))
    got = _run(func, "c", tmp_path, a, b)
    np.testing.assert_allclose(got, parts.max(axis=1), rtol=1e-4, atol=1e-4)
