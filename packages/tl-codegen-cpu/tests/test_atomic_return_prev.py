"""``T.atomic_<kind>(..., return_prev=True)`` on ``c`` and ``llvm``: every thread gets
the value its update found, checked against numpy. Global destinations go through
``tl_atomic_fetch_<kind>_<dtype>`` (blocks run concurrently); block-local ones are a
plain read then update, and the thread nest holding one stays scalar loops (as SIMD
lanes every lane would read the same element)."""

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
from tl_codegen_cpu.lowering.fetching_atomics import FETCHING_ATOMIC_PATH
from tl_codegen_cpu.lowering.thread_lanes import THREAD_PATH_KEY
from tl_codegen_cpu.passes import CpuLowerLaunchPass
from tl_passes import PassContext

BLOCKS, THREADS = 4, 32
N = BLOCKS * THREADS
TARGETS = ["c", "llvm"]


def fetch_into_global(kind: str, dtype: str) -> Any:
    """Each thread folds V[i] into Acc[0] and records what it found in Prev[i]."""
    update = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min}[kind]

    @T.prim_func
    def main(V: T.Tensor((N,), dtype), Prev: T.Tensor((N,), dtype), Acc: T.Tensor((1,), dtype)):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tx = T.get_thread_binding()
            Prev[bx * THREADS + tx] = update(Acc[0], V[bx * THREADS + tx], return_prev=True)

    return main


@T.prim_func
def compact_through_shared(
    A: T.Tensor((N,), "float32"), Out: T.Tensor((N,), "int32"), Count: T.Tensor((BLOCKS,), "int32")
):
    # Stream compaction: the kept elements of each block take consecutive slots.
    with T.Kernel(BLOCKS, threads=THREADS) as bx:
        tx = T.get_thread_binding()
        count = T.alloc_shared([1], "int32")
        if tx == 0:
            count[0] = 0
        T.sync_threads()
        if A[bx * THREADS + tx] > 0:
            pos = T.atomic_add(count[0], 1, return_prev=True)
            Out[bx * THREADS + pos] = bx * THREADS + tx
        T.sync_threads()
        if tx == 0:
            Count[bx] = count[0]


def _run(func: Any, target: str, tmp_path: Path, *arrays: np.ndarray) -> None:
    context = create_backend_context(target)
    artifact = build_artifact(context, func, tmp_path / target, dump_dir=None)
    tl_runtime.load(artifact)(*arrays)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "float32", "float16", "int64"])
def test_a_fetching_add_hands_out_every_previous_count_once(target, dtype, tmp_path):
    v = np.ones(N, dtype)
    prev = np.full(N, -7, dtype)
    acc = np.zeros(1, dtype)
    _run(fetch_into_global("add", dtype), target, tmp_path, v, prev, acc)
    assert acc[0] == N
    # The threads race; whatever their order, each saw a different count 0..N-1.
    np.testing.assert_array_equal(np.sort(prev), np.arange(N, dtype=dtype))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["max", "min"])
def test_a_fetching_max_or_min_returns_a_value_the_element_held(target, kind, tmp_path):
    v = np.random.default_rng(2).permutation(N).astype(np.float32)
    prev = np.full(N, np.nan, np.float32)
    start = np.float32(N / 2)
    acc = np.full(1, start, np.float32)
    _run(fetch_into_global(kind, "float32"), target, tmp_path, v, prev, acc)
    fold = np.maximum if kind == "max" else np.minimum
    assert acc[0] == fold(start, fold.reduce(v))
    # Each thread saw the start or another thread's value, never past its own result,
    # and the thread whose value wins last saw no better one.
    assert set(prev.tolist()) <= {float(start), *v.tolist()}
    assert np.all(fold(prev, v) == fold(prev, fold(prev, v)))
    best = np.flatnonzero(v == fold.reduce(v))[0]
    assert fold(prev[best], v[best]) == v[best]


def test_the_global_fetching_atomic_is_the_fetch_function():
    context = create_backend_context("c")
    source = lower_to_sources(context, fetch_into_global("add", "int32")).files["kernel.c"]
    assert re.search(r"= tl_atomic_fetch_add_int32\(", source)


@pytest.mark.parametrize("target", TARGETS)
def test_stream_compaction_through_a_shared_counter(target, tmp_path):
    a = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    out = np.full(N, -1, np.int32)
    count = np.zeros(BLOCKS, np.int32)
    _run(compact_through_shared, target, tmp_path, a, out, count)
    for block in range(BLOCKS):
        rows = slice(block * THREADS, (block + 1) * THREADS)
        kept = np.flatnonzero(a[rows] > 0) + block * THREADS
        assert count[block] == kept.size
        np.testing.assert_array_equal(np.sort(out[rows][: kept.size]), kept)


def test_the_thread_nest_with_a_fetching_atomic_says_it_stays_scalar():
    mod = tvm.IRModule({"main": compact_through_shared})
    lowered = CpuLowerLaunchPass().run(mod, PassContext(target=tvm.target.Target("c")))
    paths = re.findall(rf'"{re.escape(THREAD_PATH_KEY)}": "([^"]*)"', lowered.script())
    assert paths.count(FETCHING_ATOMIC_PATH) == 1, paths
    assert "tl.cpu_fetching_atomic" not in lowered.script()


@T.prim_func
def compact_in_parallel_nest(
    A: T.Tensor((N,), "float32"), Out: T.Tensor((N,), "int32"), Count: T.Tensor((BLOCKS,), "int32")
):
    # No thread index: the T.Parallel nest is the block's work, one slot per kept element.
    with T.Kernel(BLOCKS, threads=THREADS) as bx:
        count = T.alloc_shared([1], "int32")
        T.fill(count, 0)
        for i in T.Parallel(THREADS):
            if A[bx * THREADS + i] > 0:
                pos = T.atomic_add(count[0], 1, return_prev=True)
                Out[bx * THREADS + pos] = bx * THREADS + i
        Count[bx] = count[0]


@pytest.mark.parametrize("target", TARGETS)
def test_stream_compaction_in_a_parallel_nest(target, tmp_path):
    a = np.random.default_rng(5).standard_normal(N).astype(np.float32)
    out = np.full(N, -1, np.int32)
    count = np.zeros(BLOCKS, np.int32)
    _run(compact_in_parallel_nest, target, tmp_path, a, out, count)
    for block in range(BLOCKS):
        rows = slice(block * THREADS, (block + 1) * THREADS)
        kept = np.flatnonzero(a[rows] > 0) + block * THREADS
        assert count[block] == kept.size
        np.testing.assert_array_equal(np.sort(out[rows][: kept.size]), kept)
