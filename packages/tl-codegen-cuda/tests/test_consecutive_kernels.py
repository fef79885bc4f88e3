"""Consecutive ``T.Kernel`` launches in one prim_func lower for CUDA as one device kernel
per launch (own threads, fragments and shared memory), described in launch order in
`KernelSources.launches` (what the manifest's ``launches`` records), compile with nvcc
and, run in order under the CPU emulation, compute what numpy does."""

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
from tl_backend_api.protocols import KernelArgument, KernelSources
from tl_codegen_cuda.backend import BACKEND
from tl_codegen_cuda.codegen import CudaDeviceCodegen

N = 256


def two_kernels() -> Any:
    @T.prim_func
    def main(
        A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")
    ):
        # First launch: B = 2 * A through a fragment and a shared tile (4 blocks of 64).
        with T.Kernel(4, threads=64) as bx:
            S = T.alloc_shared((64,), "float32")
            F = T.alloc_fragment((64,), "float32")
            T.copy(A[bx * 64], S)
            T.copy(S, F)
            for i in T.Parallel(64):
                F[i] = F[i] * 2.0
            T.copy(F, B[bx * 64])
        # Second launch: reads what other blocks of the first wrote (B reversed), with a
        # differently shaped block, grid and shared tile.
        with T.Kernel(2, threads=128) as bx:
            R = T.alloc_shared((128,), "float32")
            T.copy(B[N - 128 - bx * 128], R)
            for i in T.Parallel(128):
                C[bx * 128 + i] = R[127 - i] + 1.0

    return main


def lower() -> KernelSources:
    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    mod = BACKEND.pipelines["cuda"].run(kernel_module(two_kernels(), "two"), target)
    return CudaDeviceCodegen().emit_source(mod, target)


def test_each_launch_is_its_own_device_kernel_in_launch_order() -> None:
    sources = lower()
    launches = [
        (k.kernel_name, k.grid, k.block, k.dynamic_shared_memory_bytes) for k in sources.launches
    ]
    assert launches == [("two_kernel", (4,), (64,), 256), ("two_kernel_1", (2,), (128,), 512)]
    assert sources.entry_symbol == "two_kernel"
    assert [(a.kind, a.name) for a in sources.launches[0].arguments] == [
        ("buffer", "A"),
        ("buffer", "B"),
    ]
    assert [(a.kind, a.name) for a in sources.launches[1].arguments] == [
        ("buffer", "B"),
        ("buffer", "C"),
    ]
    assert list(sources.files) == ["two.cu"]


def test_one_launch_is_one_kernel_launch() -> None:
    @T.prim_func
    def one(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                B[i] = A[i]

    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    mod = BACKEND.pipelines["cuda"].run(kernel_module(one, "one"), target)
    sources = CudaDeviceCodegen().emit_source(mod, target)
    (launch,) = sources.launches
    assert (launch.kernel_name, launch.grid, launch.block) == ("one_kernel", (1,), (64,))
    assert [(a.kind, a.name) for a in launch.arguments] == [("buffer", "A"), ("buffer", "B")]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed here")
def test_compiles_with_nvcc(tmp_path: Path) -> None:
    path = tmp_path / "two.cu"
    path.write_text(lower().files["two.cu"])
    done = subprocess.run(
        [
            str(shutil.which("nvcc")),
            "-cubin",
            "-arch=sm_80",
            "-o",
            str(tmp_path / "two.cubin"),
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
def test_launches_in_order_match_numpy_under_emulation() -> None:
    sources = lower()
    source = sources.files["two.cu"]
    a = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    b = np.zeros(N, np.float32)
    c = np.zeros(N, np.float32)
    for launch in sources.launches:
        library = emu.compile_emulation(source, launch, emu.scratch_dir())
        emu.run_emulated(library, launch, launch.grid, launch.block, {"A": a, "B": b, "C": c})
    np.testing.assert_allclose(b, 2 * a, rtol=1e-6)
    np.testing.assert_allclose(c, (2 * a)[::-1] + 1, rtol=1e-6)


def through_workspace() -> Any:
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        W = T.alloc_global((N,), "float32")
        with T.Kernel(4, threads=64) as bx:
            for i in T.Parallel(64):
                W[bx * 64 + i] = A[bx * 64 + i] * 2.0
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = W[N - 1 - bx * 128 - i] + 1.0

    return main


@pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
def test_a_global_workspace_is_a_launcher_allocated_argument_shared_by_the_kernels() -> None:
    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    mod = BACKEND.pipelines["cuda"].run(kernel_module(through_workspace(), "ws"), target)
    sources = CudaDeviceCodegen().emit_source(mod, target)
    first, second = sources.launches
    workspace = KernelArgument("workspace", "W", "float32", N * 4)
    assert workspace in first.arguments and workspace in second.arguments
    a = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    b = np.zeros(N, np.float32)
    params: dict[str, Any] = {"A": a, "B": b}
    for launch in sources.launches:
        library = emu.compile_emulation(sources.files["ws.cu"], launch, emu.scratch_dir())
        emu.run_emulated(library, launch, launch.grid, launch.block, params)
    np.testing.assert_allclose(b, (2 * a)[::-1] + 1, rtol=1e-6)
