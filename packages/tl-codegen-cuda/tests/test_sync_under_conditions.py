"""Shared-memory tiles written under a run-time ``if`` or inside a ``while`` lower for CUDA
(the block barrier stays inside a block-uniform condition; a thread-dependent ``if`` is
split at it), compile with nvcc and compute what numpy does under the CPU emulation."""

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
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import cuda_emulation as emu

import tl_ir.language as T
from tl_backend_api import KernelLaunch
from tl_backend_api.artifact import kernel_module
from tl_codegen_cuda.backend import BACKEND
from tl_codegen_cuda.codegen import CudaDeviceCodegen

NVCC = shutil.which("nvcc")


def copy_under_uniform_if() -> Any:
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32"), flag: T.int32):
        with T.Kernel(1, threads=128) as _bx:
            S = T.alloc_shared((128,), "float32")
            if flag > 0:
                T.copy(A[0], S)
                for i in T.Parallel(128):
                    B[i] = S[127 - i]

    return main


def copy_inside_while() -> Any:
    @T.prim_func
    def main(A: T.Tensor((512,), "float32"), B: T.Tensor((128,), "float32"), n: T.int32):
        with T.Kernel(1, threads=128) as _bx:
            S = T.alloc_shared((128,), "float32")
            k = T.alloc_var("int32")
            k = 0
            while k < n:
                T.copy(A[k * 128], S)
                for i in T.Parallel(128):
                    B[i] = B[i] + S[127 - i]
                k = k + 1

    return main


def per_thread_if() -> Any:
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((128,), "float32")
            if tx < 64:
                S[tx] = A[tx] * 2.0
                B[tx] = S[63 - tx]

    return main


def two_tiles_under_mask() -> Any:
    """SeerAttention's shape: a block-sparse loop whose body runs under a condition read
    from a fragment (the same on every thread), copying into one shared tile, reading it,
    then copying into a second one. TVM's own barrier planner wants a barrier between
    the reads of S and the writes of U (dynamic shared tiles share one allocation); it
    may place it there only because the condition is marked block-uniform."""

    @T.prim_func
    def main(
        A: T.Tensor((4, 128), "float32"),
        Mask: T.Tensor((4,), "int8"),
        B: T.Tensor((128,), "float32"),
    ):
        with T.Kernel(1, threads=128) as _bx:
            S = T.alloc_shared((128,), "float32")
            U = T.alloc_shared((128,), "float32")
            mask = T.alloc_fragment((4,), "int8")
            acc = T.alloc_fragment((128,), "float32")
            T.copy(Mask, mask)
            T.clear(acc)
            for k in T.serial(4):
                if mask[k] != 0:
                    T.copy(A[k, 0:128], S)
                    for i in T.Parallel(128):
                        acc[i] += S[127 - i]
                    T.copy(A[k, 0:128], U)
                    for i in T.Parallel(128):
                        acc[i] += U[i] * 2.0
            T.copy(acc, B)

    return main


def cuda_sources(func: Any, name: str) -> tuple[str, KernelLaunch]:
    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    mod = BACKEND.pipelines["cuda"].run(kernel_module(func, name), target)
    sources = CudaDeviceCodegen().emit_source(mod, target)
    (launch,) = sources.launches
    return sources.files[f"{name}.cu"], launch


def kernel_text(source: str) -> str:
    return source.split('extern "C" __global__')[-1]


CASES = {
    "uniform_if": copy_under_uniform_if,
    "while_loop": copy_inside_while,
    "per_thread_if": per_thread_if,
    "two_tiles_under_mask": two_tiles_under_mask,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowers_with_every_barrier_outside_thread_dependent_code(name: str) -> None:
    source, _ = cuda_sources(CASES[name](), name)
    assert "__syncthreads()" in kernel_text(source)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiles_with_nvcc(name: str, tmp_path: Path) -> None:
    source, _ = cuda_sources(CASES[name](), name)
    path = tmp_path / f"{name}.cu"
    path.write_text(source)
    done = subprocess.run(
        [str(NVCC), "-cubin", "-arch=sm_80", "-o", str(tmp_path / f"{name}.cubin"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def run(name: str, params: dict[str, Any]) -> None:
    source, launch = cuda_sources(CASES[name](), name)
    library = emu.compile_emulation(source, launch, emu.scratch_dir())
    emu.run_emulated(library, launch, (1,), (128,), params)


needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


@needs_gxx
@pytest.mark.parametrize("flag", [0, 1])
def test_uniform_if_matches_numpy_under_emulation(flag: int) -> None:
    a = np.arange(128, dtype=np.float32)
    b = np.full(128, -1.0, dtype=np.float32)
    run("uniform_if", {"A": a, "B": b, "flag": flag})
    np.testing.assert_array_equal(b, a[::-1] if flag else np.full(128, -1.0, np.float32))


@needs_gxx
def test_while_loop_matches_numpy_under_emulation() -> None:
    a = np.random.default_rng(3).random(512, dtype=np.float32)
    b = np.zeros(128, dtype=np.float32)
    run("while_loop", {"A": a, "B": b, "n": 3})
    expected = sum(a[k * 128 : (k + 1) * 128][::-1] for k in range(3))
    np.testing.assert_allclose(b, expected, rtol=1e-6)


@needs_gxx
def test_split_per_thread_if_matches_numpy_under_emulation() -> None:
    a = np.arange(128, dtype=np.float32)
    b = np.full(128, -1.0, dtype=np.float32)
    run("per_thread_if", {"A": a, "B": b})
    expected = np.full(128, -1.0, dtype=np.float32)
    expected[:64] = 2 * a[:64][::-1]
    np.testing.assert_array_equal(b, expected)


@needs_gxx
def test_two_tiles_under_a_fragment_mask_match_numpy_under_emulation() -> None:
    a = np.random.default_rng(5).random((4, 128), dtype=np.float32)
    mask = np.array([1, 0, 1, 1], dtype=np.int8)
    b = np.full(128, np.nan, dtype=np.float32)
    run("two_tiles_under_mask", {"A": a, "Mask": mask, "B": b})
    expected = sum(a[k][::-1] + a[k] * 2 for k in range(4) if mask[k])
    np.testing.assert_allclose(b, expected, rtol=1e-6)
