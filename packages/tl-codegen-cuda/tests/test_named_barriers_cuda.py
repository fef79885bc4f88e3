"""Named barriers (``T.sync_threads(id, count)``) on CUDA: ``bar.sync id, count`` through
the prelude's helper, nvcc compiles it, and TileLang's top-k scan (the first RADIX threads
of the block between named barriers) computes numpy's suffix sums under the CPU emulation;
counts the hardware cannot take, and targets without named barriers, are refused."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T
from tl_backend_api.artifact import kernel_module
from tl_passes.gpu import GpuLoweringError, GpuTraits
from tl_passes.gpu.lower_tile_ops import lower_gpu_tile_ops

NVCC = shutil.which("nvcc")
THREADS = 128
RADIX = 64


def suffix_sum(count: int = RADIX) -> Any:
    @T.prim_func
    def main(A: T.Tensor((RADIX,), "int32"), B: T.Tensor((RADIX,), "int32")):
        with T.Kernel(1, threads=THREADS) as _bx:
            tx = T.get_thread_binding()
            histogram = T.alloc_shared([RADIX], "int32")
            value = T.alloc_var("int32")
            if tx < RADIX:
                histogram[tx] = A[tx]
            T.sync_threads()
            if tx < RADIX:
                for i in T.serial(6):
                    offset = 1 << i
                    T.sync_threads(3, count)
                    if tx < RADIX - offset:
                        value = histogram[tx] + histogram[tx + offset]
                    T.sync_threads(3, count)
                    if tx < RADIX - offset:
                        histogram[tx] = value
                T.sync_threads(3, count)
                B[tx] = histogram[tx]

    return main


def test_a_named_barrier_is_bar_sync_with_its_id_and_count() -> None:
    sources = emu.lower_for_cuda(suffix_sum())
    text = sources.files["main.cu"]
    kernel = text.split('extern "C" __global__')[-1]
    assert kernel.count("tl_named_barrier_sync(3, 64)") == 3
    assert 'asm volatile("bar.sync %0, %1;"' in text
    # no whole-block barrier was added inside the thread-dependent branch
    assert kernel.count("__syncthreads()") == 1


def test_kernels_without_named_barriers_do_not_get_the_helper() -> None:
    @T.prim_func
    def plain(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            tx = T.get_thread_binding()
            A[tx] = A[tx] + 1.0

    assert "tl_named_barrier_sync" not in emu.lower_for_cuda(plain).files["main.cu"]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
def test_compiles_with_nvcc(tmp_path: Path) -> None:
    path = tmp_path / "main.cu"
    path.write_text(emu.lower_for_cuda(suffix_sum()).files["main.cu"])
    done = subprocess.run(
        [str(NVCC), "-cubin", "-arch=sm_80", "-o", str(tmp_path / "main.cubin"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
def test_the_scan_matches_numpy_under_emulation() -> None:
    a = np.random.default_rng(1).integers(0, 100, size=RADIX, dtype=np.int32)
    b = np.zeros(RADIX, dtype=np.int32)
    emu.emulate(suffix_sum(), {"A": a, "B": b})
    np.testing.assert_array_equal(b, np.cumsum(a[::-1])[::-1])


def test_a_count_that_is_not_whole_warps_is_refused() -> None:
    with pytest.raises(GpuLoweringError, match=r"multiple of the warp size 32.*got 48"):
        emu.lower_for_cuda(suffix_sum(count=48))


def test_a_target_without_named_barriers_refuses_a_partial_one() -> None:
    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    traits = GpuTraits(name="plain", warp_size=32)
    func = kernel_module(suffix_sum(), "main")["main"]
    with pytest.raises(GpuLoweringError, match=r"target 'plain' has no barrier among part"):
        lower_gpu_tile_ops(func, traits, target)
