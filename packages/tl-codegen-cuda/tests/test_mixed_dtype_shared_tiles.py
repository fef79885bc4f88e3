"""A float16 shared tile read by a tensor-core GEMM (``ldmatrix`` access pointers) whose
first use comes after the last use of a float32 shared tile: TVM's ``StorageRewrite``
would put the float16 tile in the dead float32 tile's memory and its access pointers on
the float32 allocation, which ``LowerIntrin`` refuses after the dynamic shared memory
merge (``tvm_access_ptr element type must match the source buffer``). The TileLang
corpus's linear attention backward hit it (``dh_shared`` in ``dq_shared``'s place). The
cuda codegen leaves shared memory reuse to the merge (`shared_memory_planned_by_merge`).
Checked on the CUDA source, with nvcc, and for the numbers under the CPU emulation."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T
from tl_backend_api import KernelLaunch, ToolchainError
from tl_backend_api.artifact import kernel_module
from tl_codegen_cuda.backend import BACKEND
from tl_codegen_cuda.codegen import SHARED_MEMORY_BY_MERGE, CudaDeviceCodegen

NVCC = shutil.which("nvcc")
N = 32


def float16_tile_after_float32_tile() -> Any:
    """``C_s`` (float32) is dead after the atomic add; ``D_s`` (float16) is first written
    after it and read by the second GEMM."""

    @T.prim_func
    def main(
        A: T.Tensor((N, N), "float16"),
        B: T.Tensor((N, N), "float16"),
        C: T.Tensor((N, N), "float32"),
        E: T.Tensor((N, N), "float32"),
    ):
        with T.Kernel(1, threads=128) as _bx:
            A_s = T.alloc_shared((N, N), "float16")
            B_s = T.alloc_shared((N, N), "float16")
            C_s = T.alloc_shared((N, N), "float32")
            D_s = T.alloc_shared((N, N), "float16")
            acc = T.alloc_fragment((N, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc, clear_accum=True)
            T.copy(acc, C_s)
            T.atomic_add(C, C_s)
            for i, j in T.Parallel(N, N):
                D_s[i, j] = A_s[j, i]
            T.gemm(D_s, B_s, acc, clear_accum=True)
            T.copy(acc, E)

    return main


def cuda_source() -> tuple[str, KernelLaunch]:
    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    mod = BACKEND.pipelines["cuda"].run(
        kernel_module(float16_tile_after_float32_tile(), "main"), target
    )
    sources = CudaDeviceCodegen().emit_source(mod, target)
    (launch,) = sources.launches
    return sources.files["main.cu"], launch


def test_the_float16_tile_is_read_by_ldmatrix_from_merged_shared_memory() -> None:
    kernel = cuda_source()[0].split('extern "C" __global__')[-1]
    assert kernel.count("tl_ldmatrix_x4") >= 4, kernel
    assert "buf_dyn_shmem" in kernel, kernel


def test_a_pass_config_the_caller_sets_is_kept() -> None:
    """``tirx.merge_static_smem=False`` given by the caller is TVM's own behaviour again,
    which refuses this kernel: the switch is what makes it build."""
    with (
        tvm.transform.PassContext(config={SHARED_MEMORY_BY_MERGE: False}),
        pytest.raises(ToolchainError, match="element type must match"),
    ):
        cuda_source()


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
def test_compiles_with_nvcc(tmp_path: Path) -> None:
    path = tmp_path / "mixed.cu"
    path.write_text(cuda_source()[0])
    done = subprocess.run(
        [str(NVCC), "-cubin", "-arch=sm_80", "-o", str(tmp_path / "mixed.cubin"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
def test_matches_numpy_under_emulation() -> None:
    rng = np.random.default_rng(13)
    a = rng.standard_normal((N, N)).astype(np.float16)
    b = rng.standard_normal((N, N)).astype(np.float16)
    c = np.zeros((N, N), dtype=np.float32)
    e = np.full((N, N), np.nan, dtype=np.float32)
    source, launch = cuda_source()
    library = emu.compile_emulation(source, launch, emu.scratch_dir())
    emu.run_emulated(library, launch, (1,), (128,), {"A": a, "B": b, "C": c, "E": e})
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_allclose(c, a32 @ b32, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(e, a32.T @ b32, rtol=1e-3, atol=1e-3)
