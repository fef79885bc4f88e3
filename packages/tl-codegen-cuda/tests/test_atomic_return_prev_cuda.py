"""``T.atomic_<kind>(..., return_prev=True)`` on CUDA: the result of ``atomicAdd`` (and of
the prelude's max/min helpers), the element's value before the update, lands in the
thread's own variable. The source says so, nvcc compiles it, and the CPU emulation
(``std::atomic_ref::fetch_add``) runs a stream compaction against numpy."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T

BLOCKS, THREADS = 3, 64
N = BLOCKS * THREADS
NVCC = shutil.which("nvcc")


def compaction() -> Any:
    """Per block, kept elements take consecutive slots through a shared counter; over the
    grid, each block's count takes its slot through a global one."""

    @T.prim_func
    def main(
        A: T.Tensor((N,), "float32"),
        Out: T.Tensor((N,), "int32"),
        Count: T.Tensor((BLOCKS,), "int32"),
        Order: T.Tensor((BLOCKS,), "int32"),
        Blocks: T.Tensor((1,), "int32"),
        Best: T.Tensor((1,), "float32"),
    ):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tx = T.get_thread_binding()
            count = T.alloc_shared([1], "int32")
            if tx == 0:
                count[0] = 0
            T.sync_threads()
            if A[bx * THREADS + tx] > 0:
                pos = T.atomic_add(count[0], 1, return_prev=True)
                Out[bx * THREADS + pos] = bx * THREADS + tx
            T.atomic_max(Best[0], A[bx * THREADS + tx], return_prev=True)
            T.sync_threads()
            if tx == 0:
                Count[bx] = count[0]
                Order[bx] = T.atomic_add(Blocks[0], 1, return_prev=True)

    return main


def test_the_source_keeps_what_the_atomics_return() -> None:
    text = emu.lower_for_cuda(compaction()).files["main.cu"]
    kernel = text.split('extern "C" __global__')[-1]
    assert len(re.findall(r"\w+\[0\] = atomicAdd\(", kernel)) == 2
    assert re.search(r"\w+\[0\] = tl_atomic_max\(", kernel)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
def test_nvcc_compiles_the_returning_atomics(tmp_path: Path) -> None:
    source = tmp_path / "main.cu"
    source.write_text(emu.lower_for_cuda(compaction()).files["main.cu"])
    done = subprocess.run(
        [str(NVCC), "-cubin", "-arch=sm_80", "-o", str(tmp_path / "main.cubin"), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
def test_emulated_compaction_matches_numpy() -> None:
    a = np.random.default_rng(4).standard_normal(N).astype(np.float32)
    arrays = {
        "A": a,
        "Out": np.full(N, -1, np.int32),
        "Count": np.zeros(BLOCKS, np.int32),
        "Order": np.full(BLOCKS, -1, np.int32),
        "Blocks": np.zeros(1, np.int32),
        "Best": np.full(1, -np.inf, np.float32),
    }
    emu.emulate(compaction(), arrays)
    for block in range(BLOCKS):
        rows = slice(block * THREADS, (block + 1) * THREADS)
        kept = np.flatnonzero(a[rows] > 0) + block * THREADS
        assert arrays["Count"][block] == kept.size
        np.testing.assert_array_equal(np.sort(arrays["Out"][rows][: kept.size]), kept)
    np.testing.assert_array_equal(np.sort(arrays["Order"]), np.arange(BLOCKS))
    assert arrays["Blocks"][0] == BLOCKS and arrays["Best"][0] == a.max()


def parallel_compaction() -> Any:
    """The same compaction as a ``T.Parallel`` nest over the block's elements: the
    previous value is a temporary of one iteration, so the nest is still dealt to the
    threads (each element claims one slot), not run whole on every thread."""

    @T.prim_func
    def main(
        A: T.Tensor((N,), "float32"),
        Out: T.Tensor((N,), "int32"),
        Count: T.Tensor((BLOCKS,), "int32"),
    ):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            count = T.alloc_shared([1], "int32")
            T.fill(count, 0)
            for i in T.Parallel(THREADS):
                if A[bx * THREADS + i] > 0:
                    pos = T.atomic_add(count[0], 1, return_prev=True)
                    Out[bx * THREADS + pos] = bx * THREADS + i
            Count[bx] = count[0]

    return main


@pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
def test_a_fetching_atomic_in_a_parallel_nest_runs_once_per_element() -> None:
    a = np.random.default_rng(6).standard_normal(N).astype(np.float32)
    arrays = {"A": a, "Out": np.full(N, -1, np.int32), "Count": np.zeros(BLOCKS, np.int32)}
    sources = emu.emulate(parallel_compaction(), arrays)
    kernel = sources.files["main.cu"].split('extern "C" __global__')[-1]
    assert "for (" not in kernel  # one element per thread, no nest on every thread
    for block in range(BLOCKS):
        rows = slice(block * THREADS, (block + 1) * THREADS)
        kept = np.flatnonzero(a[rows] > 0) + block * THREADS
        assert arrays["Count"][block] == kept.size
        np.testing.assert_array_equal(np.sort(arrays["Out"][rows][: kept.size]), kept)
