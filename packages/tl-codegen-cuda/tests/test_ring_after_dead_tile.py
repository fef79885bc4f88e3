"""A pipelined ring started right after the last reads of a shared tile that is dead from
there on: the dynamic shared memory merge gives the ring's slots that tile's memory, so
the ring's prologue (its first async copies) needs a block barrier before it, or a fast
warp's copies land while a slow warp still reads the old tile. The race the TileLang
corpus's Mamba-2 chunk scan hit (C and the previous states read by a GEMM, then the
ring of cb and x tiles in their memory). Likewise a ring run again in an outer loop:
its prologue refills a slot the last run's slow warps may still read. Checked on the
CUDA source, with nvcc, and for the numbers under the CPU emulation (which lands each
thread's copies at its wait)."""

from __future__ import annotations

import re
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
from tl_backend_api import KernelLaunch
from tl_backend_api.artifact import kernel_module
from tl_codegen_cuda.backend import BACKEND
from tl_codegen_cuda.codegen import CudaDeviceCodegen

NVCC = shutil.which("nvcc")
_FIRST_READ = r"acc_regs_ptr\[0\] = [^;]*;"
"""The statement reading ``S`` before the ring (the first one assigning ``acc``)."""


def ring_after_dead_tile() -> Any:
    """``S`` is read across threads (reversed), then dead; the ring of ``R`` follows."""

    @T.prim_func
    def main(
        A: T.Tensor((256,), "float32"),
        B: T.Tensor((2, 128), "float32"),
        C: T.Tensor((128,), "float32"),
    ):
        with T.Kernel(1, threads=128) as _bx:
            S = T.alloc_shared((256,), "float32")
            R = T.alloc_shared((128,), "float32")
            acc = T.alloc_fragment((128,), "float32")
            T.copy(A[0:256], S)
            for i in T.Parallel(128):
                acc[i] = S[255 - i] + S[127 - i]
            for k in T.Pipelined(2, num_stages=2):
                T.copy(B[k, 0:128], R)
                for i in T.Parallel(128):
                    acc[i] += R[127 - i]
            T.copy(acc, C)

    return main


def ring_after_live_tile() -> Any:
    """``S`` is read before the ring and inside it: live across the ring, so its memory
    is not the ring's and the prologue needs no barrier of its own."""

    @T.prim_func
    def main(
        A: T.Tensor((128,), "float32"),
        B: T.Tensor((2, 128), "float32"),
        C: T.Tensor((128,), "float32"),
    ):
        with T.Kernel(1, threads=128) as _bx:
            S = T.alloc_shared((128,), "float32")
            R = T.alloc_shared((128,), "float32")
            acc = T.alloc_fragment((128,), "float32")
            T.copy(A[0:128], S)
            for i in T.Parallel(128):
                acc[i] = S[127 - i]
            for k in T.Pipelined(2, num_stages=2):
                T.copy(B[k, 0:128], R)
                for i in T.Parallel(128):
                    acc[i] += R[127 - i] * S[i]
            T.copy(acc, C)

    return main


def ring_in_outer_loop() -> Any:
    """The ring of ``R`` run twice: the second run's prologue refills slot 0, which the
    first run's last iteration (``k = 2``) read."""

    @T.prim_func
    def main(B: T.Tensor((2, 3, 128), "float32"), C: T.Tensor((2, 128), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            R = T.alloc_shared((128,), "float32")
            acc = T.alloc_fragment((128,), "float32")
            for o in T.serial(2):
                T.clear(acc)
                for k in T.Pipelined(3, num_stages=2):
                    T.copy(B[o, k, 0:128], R)
                    for i in T.Parallel(128):
                        acc[i] += R[127 - i]
                T.copy(acc, C[o, 0:128])

    return main


def cuda_source(func: Any = None) -> tuple[str, KernelLaunch]:
    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    func = ring_after_dead_tile() if func is None else func
    mod = BACKEND.pipelines["cuda"].run(kernel_module(func, "main"), target)
    sources = CudaDeviceCodegen().emit_source(mod, target)
    (launch,) = sources.launches
    return sources.files["main.cu"], launch


def test_a_barrier_separates_the_dead_tiles_reads_from_the_prologue() -> None:
    kernel = cuda_source()[0].split('extern "C" __global__')[-1]
    first_copy = kernel.index("tl_cp_async")
    reads_of_s = re.search(_FIRST_READ, kernel)
    assert reads_of_s is not None and reads_of_s.end() < first_copy, kernel
    assert "__syncthreads()" in kernel[reads_of_s.end() : first_copy], kernel


def test_a_tile_live_across_the_ring_adds_no_barrier_before_the_prologue() -> None:
    kernel = cuda_source(ring_after_live_tile())[0].split('extern "C" __global__')[-1]
    first_copy = kernel.index("tl_cp_async")
    reads_of_s = re.search(_FIRST_READ, kernel)
    assert reads_of_s is not None and reads_of_s.end() < first_copy, kernel
    assert "__syncthreads()" not in kernel[reads_of_s.end() : first_copy], kernel


def test_a_ring_run_again_waits_for_the_last_runs_reads() -> None:
    kernel = cuda_source(ring_in_outer_loop())[0].split('extern "C" __global__')[-1]
    outer_end = kernel.rindex("}", 0, kernel.rindex("}"))
    last_read = kernel.rindex("R_ptr[", 0, outer_end)
    assert "__syncthreads()" in kernel[last_read:outer_end], kernel


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
@pytest.mark.parametrize("program", [ring_after_dead_tile, ring_in_outer_loop])
def test_compiles_with_nvcc(program: Any, tmp_path: Path) -> None:
    path = tmp_path / "ring.cu"
    path.write_text(cuda_source(program())[0])
    done = subprocess.run(
        [str(NVCC), "-cubin", "-arch=sm_80", "-o", str(tmp_path / "ring.cubin"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
def test_matches_numpy_under_emulation() -> None:
    rng = np.random.default_rng(11)
    a = rng.random(256, dtype=np.float32)
    b = rng.random((2, 128), dtype=np.float32)
    c = np.full(128, np.nan, dtype=np.float32)
    source, launch = cuda_source()
    library = emu.compile_emulation(source, launch, emu.scratch_dir())
    emu.run_emulated(library, launch, (1,), (128,), {"A": a, "B": b, "C": c})
    expected = a[::-1][:128] + a[:128][::-1] + b[0][::-1] + b[1][::-1]
    np.testing.assert_allclose(c, expected, rtol=1e-6)


@pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
def test_ring_in_outer_loop_matches_numpy_under_emulation() -> None:
    b = np.random.default_rng(12).random((2, 3, 128), dtype=np.float32)
    c = np.full((2, 128), np.nan, dtype=np.float32)
    source, launch = cuda_source(ring_in_outer_loop())
    library = emu.compile_emulation(source, launch, emu.scratch_dir())
    emu.run_emulated(library, launch, (1,), (128,), {"B": b, "C": c})
    np.testing.assert_allclose(c, b[:, :, ::-1].sum(axis=1), rtol=1e-6)
